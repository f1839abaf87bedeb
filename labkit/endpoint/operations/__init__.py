"""One module per operation: what the operation adds to the engine's pipeline.

An operation's record in the catalogue (:data:`labkit.shared.catalogue.CATALOGUE`) says what it is;
its module here — named after it, ``GetItem`` -> ``get_item.py`` — says what the engine does for
it, as one :class:`Steps` named ``STEPS``. The engine finds the module from the catalogue
(:func:`steps_of`): no stage keeps a list of operations. An operation in the catalogue without a
module adds nothing (moto's dispatch serves it as it is); a module without a record is never
loaded (``tests/architecture/test_endpoint_layout.py`` fails on one).

The steps, in the order the engine runs them (``docs/architecture.md`` walks through adding one):

``check``
    after botocore's shapes: the operation's own rules, in DynamoDB's words; fills the
    :class:`~labkit.endpoint.plan.Plan` (the keys it reads and writes);
``execute``
    PartiQL: run the statement(s) as the requests they stand for, through the engine;
``answer``
    control plane: answer in moto's place (a response), or check against the store before moto
    answers (None);
``to_moto``
    data plane: the request moto applies (without the engine's own expressions);
``finish``
    data plane: moto's answer made DynamoDB's (projections).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...shared.catalogue import CATALOGUE
from ..checks.request import Check
from ..expressions.legacy import translate
from ..plan import ParsedOf, Plan
from ..schema import SchemaOf
from ..store.rewrite import request_for_moto, unchanged

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.decode import Request
    from ..wire.encode import Response

#: PartiQL's step: (the request, the engine's own request path, the tables' schemas) -> the answer.
Execute = Callable[["Request", Callable[["Request"], "Response"], SchemaOf], "Response"]
#: A control-plane step: (the store, the request) -> the answer, or None for moto's.
Answer = Callable[["MotoStore", "Request"], "Response | None"]
#: A check of one parameter scope: (the parameters, the tables' schemas, the plan to fill).
ScopeCheck = Callable[[Mapping[str, Any], SchemaOf, Plan], None]
#: The request moto applies: (the validated parameters, their parsed expressions) -> a copy for moto.
ToMoto = Callable[[Mapping[str, Any], ParsedOf], dict[str, Any]]
#: moto's answer made DynamoDB's, in place: (the parameters, moto's payload, the parsed expressions).
Finish = Callable[[Mapping[str, Any], dict[str, Any], ParsedOf], None]


@dataclass(frozen=True)
class Steps:
    """What one operation adds to the pipeline (see the module docstring); nothing by default."""

    check: Check | None = None
    execute: Execute | None = None
    answer: Answer | None = None
    to_moto: ToMoto = request_for_moto
    finish: Finish = unchanged


def translated(check: ScopeCheck) -> Check:
    """The check of a request on one table, run after its legacy parameters (``Expected``,
    ``AttributesToGet``, ...) are translated into expressions (:mod:`labkit.endpoint.expressions.legacy`)."""

    def checked(request: Request, schema_of: SchemaOf, plan: Plan) -> None:
        translate(request.operation, request.params)
        check(request.params, schema_of, plan)

    return checked


#: An operation without a module of its own.
NO_STEPS = Steps()
_WORD = re.compile(r"(?<!^)(?=[A-Z])")


def module_name(operation: str) -> str:
    """The module of an operation: ``GetItem`` -> ``get_item``."""
    return _WORD.sub("_", operation).lower()


@functools.cache
def steps_of(operation: str) -> Steps:
    """The steps of a DynamoDB operation: its module's ``STEPS``, or :data:`NO_STEPS` if it has no module.

    Only operations of the catalogue have modules; each module is imported the first time its
    operation is asked for.
    """
    record = CATALOGUE.get(operation)
    if record is None or record.service != "dynamodb":
        return NO_STEPS
    name = f"{__name__}.{module_name(operation)}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as missing:
        if missing.name != name:
            raise  # the module exists but imports something that does not
        return NO_STEPS
    steps = getattr(module, "STEPS", None)
    if not isinstance(steps, Steps):
        raise TypeError(f"{name} must define STEPS = Steps(...), the steps {operation} adds")
    return steps


__all__ = [
    "NO_STEPS",
    "Answer",
    "Execute",
    "Finish",
    "ScopeCheck",
    "Steps",
    "ToMoto",
    "module_name",
    "steps_of",
    "translated",
]

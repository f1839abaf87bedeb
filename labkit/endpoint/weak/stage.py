"""The weak-answer stage: one request's weak answer, planned once, then applied around the store.

:meth:`WeakStage.asked` reads the header (checked, a 400 where DynamoDB cannot give the answer);
:meth:`WeakStage.plan` settles the kind once (asked, or a hook's fault rule) and narrows the
request for ``unprocessed-items``; :meth:`Planned.apply` runs the store's apply as the kind
needs; :meth:`Planned.finish` puts back what was left over. The engine (:mod:`..engine`) calls
these in order and knows nothing of the kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...shared.catalogue import (
    WEAK_ANSWER_HEADER,
    WEAK_ANSWER_NONE,
    WEAK_ANSWER_WHERE,
    WeakAnswer,
    WeakForm,
    parse_weak_answer,
    weak_answer_misuse,
)
from ..errors import ClientFault
from ..plan import Plan
from ..schema import SchemaOf
from ..store.history import ImageHistory
from ..wire.decode import DYNAMODB, Request
from ..wire.encode import Response, response
from . import partial, stale, torn

if TYPE_CHECKING:
    from ..operations import Steps
    from ..store.moto_store import Applied, MotoStore

#: The request's header as the engine sees it (header names arrive lower-case).
HEADER = WEAK_ANSWER_HEADER.lower()


def none(reason: str) -> str:
    """The echo of an answer that could not differ from the strong one."""
    return f"{WEAK_ANSWER_NONE}; {reason}"


@dataclass
class Planned:
    """One request's weak answer, planned: the kind (None: a strong answer), the request and plan
    the store applies (narrowed for ``unprocessed-items``), what is left over, and the answer
    already given when nothing is left to apply."""

    stage: WeakStage
    form: WeakForm | None
    request: Request
    plan: Plan
    left: dict[str, Any] = field(default_factory=dict)
    answered: Response | None = None
    original: Request | None = None  # the request as sent, kept alive with its plan's scopes
    echo: str | None = None
    misfit: str | None = None  # a rule's view that does not fit this request: the echo of its strong answer

    @property
    def kind(self) -> WeakAnswer | None:
        return None if self.form is None else self.form.kind

    @property
    def narrowed(self) -> bool:
        return self.original is not None

    def apply(self, steps: Steps, schema_of: SchemaOf, track: bool) -> Applied:
        """Apply the request to the store as the kind needs; :attr:`echo` says what was done."""
        store, request, plan, params = self.stage.store, self.request, self.plan, self.request.params
        kind = self.kind
        if kind is WeakAnswer.SHORT_PAGE:
            applied, self.echo = _short_page(store, request, plan, steps.to_moto(params, plan.parsed_of), schema_of)
            return applied
        if kind is WeakAnswer.STALE_READ or kind is WeakAnswer.TORN_READ:
            history, form = self.stage.history, self.form
            assert history is not None and form is not None

            def read() -> Applied:
                return store.apply(request, plan, steps.to_moto(params, plan.parsed_of), track=track)

            def answer(found: Applied) -> dict[str, Any]:
                return stale.finished(found, lambda p: steps.finish(params, p, plan.parsed_of))

            every = kind is WeakAnswer.TORN_READ  # a torn read: strongly consistent BatchGetItem keys too
            reads = stale.scope(request, plan, schema_of, every=every)
            weak = stale.WeakRead(store, history, request, reads, read, answer, none)
            if kind is WeakAnswer.TORN_READ:
                applied, self.echo = torn.torn(weak, form)
            elif form.names_a_view:
                applied, self.echo = stale.named(weak, plan, form)
            else:
                applied, self.echo = stale.stale(weak)
            return applied
        self.echo = self.misfit if kind is None else kind.value
        return store.apply(request, plan, steps.to_moto(params, plan.parsed_of), track=track)

    def finish(self, payload: dict[str, Any]) -> None:
        """Put what was left over into the answer (``unprocessed-items``)."""
        if self.left:
            partial.add_left(self.request.operation, payload, self.left)


class WeakStage:
    """DynamoDB's weak answers for one engine: its store and its image history (None: it gives none)."""

    def __init__(self, store: MotoStore, history: ImageHistory | None) -> None:
        self.store, self.history = store, history

    def asked(self, request: Request, plan: Plan, schema_of: SchemaOf) -> WeakForm | None:
        """The weak answer the request's header asks for, if DynamoDB can give it here (else a 400);
        None: none asked."""
        value = request.headers.get(HEADER)
        if value is None:
            return None
        kind = value.strip()
        if self.history is None:
            raise ClientFault(
                "ValidationException",
                f"{WEAK_ANSWER_HEADER}: this endpoint gives no weak answers (profile dynamodb-local answers "
                f"as DynamoDB Local does); drop the header, or serve with --profile labkit ({WEAK_ANSWER_WHERE})",
            )
        operation = request.operation if request.service == DYNAMODB else f"{request.service} {request.operation}"
        why = weak_answer_misuse(kind, operation, request.params)
        if why is not None:
            raise ClientFault("ValidationException", why)
        form = parse_weak_answer(kind)
        why = _misfit(request, plan, form, schema_of)
        if why is not None:
            raise ClientFault("ValidationException", f"{WEAK_ANSWER_HEADER}: {form.text()}: {why}; {WEAK_ANSWER_WHERE}")
        return form

    def plan(
        self,
        request: Request,
        plan: Plan,
        schema_of: SchemaOf,
        asked: WeakForm | None,
        by_rule: Callable[[], str | None],
    ) -> Planned:
        """The request's weak answer, settled once: the one asked for, else a fault rule's (``by_rule``)."""
        form, misfit = asked, None
        if form is None and self.history is not None:
            ruled = by_rule()  # a rule's form fits the operation (the rule matched); its keys may not
            form = None if ruled is None else parse_weak_answer(ruled)
            misfit = None if form is None else _misfit(request, plan, form, schema_of)
        planned = Planned(self, form, request, plan)
        if misfit is not None:  # the strong answer, saying why
            planned.form, planned.misfit = None, none(misfit)
        kind = planned.kind
        if kind is WeakAnswer.UNPROCESSED_ITEMS:
            rest, narrowed, planned.left = partial.split_last(request, plan)
            if rest is None:  # its only item left over: nothing applied, nothing read
                answer = response(200, partial.all_left(request.operation, planned.left))
                answer[1][HEADER] = kind.value
                planned.answered = answer
            else:
                planned.request, planned.plan, planned.original = rest, narrowed, request
        return planned

    def control_written(self, request: Request, status: int) -> None:
        """A control-plane request changed tables (or may have): forget the images kept in its region."""
        if self.history is not None and status == 200:
            self.history.forget(request.account, request.region)


def _misfit(request: Request, plan: Plan, form: WeakForm, schema_of: SchemaOf) -> str | None:
    """Why the view ``form`` names cannot be this read's (the engine's own checks, after the protocol's)."""
    if not form.misses:
        return None
    unread = stale.misses_unread(request, plan, form)
    if unread is not None:
        reads = "reads" if form.kind is WeakAnswer.TORN_READ else "reads eventually consistently"
        return f"the key {unread} is not one this {request.operation} {reads}"
    if form.index:
        schema = schema_of(str(request.params.get("TableName")))
        index = None if schema is None else schema.index(str(request.params.get("IndexName")))
        if index is not None and index.local:
            return "a local secondary index follows its table (its partition lags as a whole): use behind=N"
    return None


def _short_page(
    store: MotoStore, request: Request, plan: Plan, given: dict[str, Any], schema_of: SchemaOf
) -> tuple[Applied, str]:
    """The page as ``Limit=1`` reads it (before any FilterExpression), with a LastEvaluatedKey."""
    limit = request.params.get("Limit")
    given["Limit"] = 1
    applied = store.apply(request, plan, given, track=True)
    payload = applied.payload
    if not payload.get("ScannedCount"):
        return applied, none("the page holds no item")
    if "LastEvaluatedKey" not in payload:
        last = partial.page_key(request, schema_of, applied.scanned)
        if last is not None:
            payload["LastEvaluatedKey"] = last
    if limit == 1:
        return applied, none("the request's Limit is already 1")
    return applied, WeakAnswer.SHORT_PAGE.value


__all__ = ["HEADER", "Planned", "WeakStage", "none"]

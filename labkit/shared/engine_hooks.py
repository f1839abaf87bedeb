"""The contract between the engine and its plug-ins: what a hook sees, and how it refuses.

The engine (:mod:`labkit.endpoint`) runs every data-plane request through decode -> validate ->
[hooks.before] -> idempotency -> apply -> meter -> [hooks.after] -> encode, under its lock.
Plug-ins (the hot-keys throttle in :mod:`labkit.engine_plugins.throughput`, the fault injector in
:mod:`labkit.engine_plugins.faults`) implement :class:`Hook`; :mod:`labkit.embedded` hands them to the engine.
This module sits on the shared floor so that both sides import it and neither imports the other.
See ``docs/decisions.md`` (the endpoint's hooks) for the semantics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class RequestInfo:
    operation: str  # an Op (labkit.shared.catalogue): PutItem, TransactWriteItems, ...
    account: str  # account id derived from the request's credentials
    region: str
    reads: tuple[tuple[str, str], ...]  # (table name, partition key value as canonical string) read
    writes: tuple[tuple[str, str], ...]  # (table name, partition key value) written
    params: Mapping[str, Any]  # the decoded, validated request (read-only)


@dataclass(frozen=True)
class Rejection:
    """DynamoDB's error answer to one request, instead of (or after) applying it."""

    code: str  # e.g. "ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"
    message: str
    status: int = 400  # HTTP status (500 for InternalServerError)
    extra: Mapping[str, Any] = field(default_factory=dict)  # more JSON fields in the error body
    apply_first: bool = False  # True: apply the request for real, THEN answer with this error


class Hook(Protocol):
    def before(self, request: RequestInfo, now: float) -> Rejection | None: ...

    def after(
        self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float
    ) -> None: ...

    # consumed: (table, partition key value) -> (read units, write units) this request consumed there
    # Optional: ``wants(request) -> bool``. A hook that defines it is called only for the requests
    # it wants; when no hook wants a request, the engine skips metering it (the fast path).
    # Optional: ``weak_answer(request, now) -> str | None``: one of DynamoDB's weak answers
    # (labkit.shared.catalogue.WeakAnswer, or a form naming a view: labkit.shared.catalogue.parse_weak_answer)
    # for a request that did not ask for one in its header; asked
    # before ``before``, only where DynamoDB can give it, and only on an engine that gives them.


def weak_answer(hook: Hook, request: RequestInfo, now: float) -> str | None:
    """The weak answer ``hook`` gives ``request`` (None: none, or the hook gives none)."""
    method = getattr(hook, "weak_answer", None)
    found = None if method is None else method(request, now)
    return None if found is None else str(found)


def wants(hook: Hook, request: RequestInfo) -> bool:
    """Whether ``hook`` is called for ``request`` (hooks without ``wants`` see every request)."""
    method = getattr(hook, "wants", None)
    return method is None or bool(method(request))


__all__ = ["Hook", "Rejection", "RequestInfo", "wants", "weak_answer"]

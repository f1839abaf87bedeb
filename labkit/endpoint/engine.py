"""The engine: one request through decode -> validate -> hooks.before -> idempotency -> apply ->
meter -> hooks.after -> encode, under one lock.

A :class:`~labkit.endpoint.encode.ClientFault` from any stage is the answer (a 4xx, nothing
written). Anything else that escapes is an engine bug: the HTTP layer answers 500 and logs it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .decode import DYNAMODB, Request, decode
from .encode import ClientFault, Response, error_response, fault_response, response
from .extensions import CONTROL_PREFIX, control, default_hooks
from .hooks import Hook, Rejection, RequestInfo, wants
from .idempotency import TokenMemory, fingerprint
from .meter import meter, replay
from .schema import TableSchema
from .validate import DATA_PLANE, Plan, validate

if TYPE_CHECKING:
    from .apply import MotoStore


class DynamoEngine:
    """Applies DynamoDB JSON requests to moto's DynamoDB, one at a time.

    ``clock`` (seconds, monotonic) dates ClientRequestTokens and is the ``now`` hooks see;
    tests inject a fake one. ``hooks`` see every validated data-plane request (see
    :mod:`labkit.endpoint.hooks`); ``None`` means the defaults of
    :func:`labkit.endpoint.extensions.default_hooks`. ``Labkit.*`` control requests go to
    :func:`labkit.endpoint.extensions.control`.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, hooks: Iterable[Hook] | None = None) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        from .apply import MotoStore  # moto takes ~0.3 s to import: only when an engine is built

        self.store: MotoStore = MotoStore()
        self.tokens = TokenMemory(clock)
        #: Counts control-plane requests (CreateTable, TagResource, ...): views of tables cached by
        #: hooks are stale once it moves.
        self.generation = 0
        self._hooks: list[Hook] = list(default_hooks(self) if hooks is None else hooks)

    # hooks and plain-data views -------------------------------------------------------------
    def add_hook(self, hook: Hook) -> None:
        """Call ``hook`` for every later data-plane request, after the hooks already added."""
        with self.lock:
            self._hooks.append(hook)

    def remove_hook(self, hook: Hook) -> None:
        """Stop calling ``hook`` (ValueError if it was not added)."""
        with self.lock:
            self._hooks.remove(hook)

    @property
    def hooks(self) -> tuple[Hook, ...]:
        """The hooks, in the order they are called."""
        with self.lock:
            return tuple(self._hooks)

    def table_tags(self, account: str, region: str, table: str) -> dict[str, str]:
        """The table's tags as a dict (empty if it has none or does not exist)."""
        with self.lock:
            return self.store.tags(account, region, table)

    def table_capacity(self, account: str, region: str, table: str) -> tuple[str, tuple[float, float] | None] | None:
        """(table ARN, (RCU, WCU) if PROVISIONED else None); None if the table does not exist."""
        with self.lock:
            return self.store.capacity(account, region, table)

    def schema(self, account: str, region: str, table: str) -> TableSchema | None:
        with self.lock:
            return self.store.schema(account, region, table)

    # requests -------------------------------------------------------------------------------
    def handle(self, headers: Mapping[str, str], body: bytes) -> Response:
        """Answer one request: (HTTP status, headers, body). ``headers`` keys are lower-case."""
        target = headers.get("x-amz-target", "")
        if target.startswith(CONTROL_PREFIX):
            with self.lock:
                return control(self, target.removeprefix(CONTROL_PREFIX), body)
        try:
            request = decode(headers, body, self.store.account_of)
            with self.lock:
                return self._handle(request)
        except ClientFault as fault:
            return fault_response(fault)

    def _handle(self, request: Request) -> Response:
        self.store.begin()
        account, region = request.account, request.region
        plan = validate(request, lambda table: self.store.schema(account, region, table))
        if request.service != DYNAMODB or request.operation not in DATA_PLANE:
            self.generation += 1
            return self.store.dispatch(request)
        params = request.params
        hooks = list(self._hooks)
        rejection: Rejection | None = None
        info = self._info(request, plan) if hooks else None
        if info is not None:
            hooks = [hook for hook in hooks if wants(hook, info)]
        for hook in hooks:
            assert info is not None
            rejection = hook.before(info, self.clock())
            if rejection is not None:
                break
        if rejection is not None and not rejection.apply_first:
            return error_response(rejection.code, rejection.message, rejection.status, **rejection.extra)

        token = params.get("ClientRequestToken") if request.operation == "TransactWriteItems" else None
        scope = (account, region, str(token))
        print_ = fingerprint(params) if token is not None else ""
        if token is not None and (earlier := self.tokens.recall(scope)) is not None:
            if earlier.fingerprint != print_:
                raise ClientFault(
                    "IdempotentParameterMismatchException",
                    f"ClientRequestToken {token!r} was used within the last {self.tokens.ttl_seconds:g} seconds "
                    "for a different request; use a new token for a new request",
                )
            payload: dict[str, Any] = {}
            mode = str(params.get("ReturnConsumedCapacity", "NONE"))
            if mode in ("TOTAL", "INDEXES"):
                items = [(t, self.store.item(account, region, t, json.loads(k))) for t, k in earlier.keys]
                payload["ConsumedCapacity"] = replay(items, mode)
            return response(200, payload)

        wanted = params.get("ReturnConsumedCapacity") in ("TOTAL", "INDEXES")
        applied = self.store.apply(request, plan, track=wanted or bool(hooks))
        payload = applied.payload
        payload.pop("ConsumedCapacity", None)
        payload.pop("ConsumedCapacityUnits", None)
        if wanted or hooks:
            metered = meter(
                request.operation,
                params,
                plan,
                applied.before,
                applied.after,
                applied.gets,
                applied.scanned,
                self._schemas(request, plan, applied.scanned),
            )
            if metered.report is not None:
                payload["ConsumedCapacity"] = metered.report
            for hook in hooks:
                assert info is not None
                hook.after(info, MappingProxyType(metered.partitions), self.clock())
        if token is not None:
            keys = tuple((t.table, json.dumps(t.key, sort_keys=True)) for t in plan.writes)
            self.tokens.remember(scope, print_, keys)
        if rejection is not None:
            return error_response(rejection.code, rejection.message, rejection.status, **rejection.extra)
        return response(200, payload)

    @staticmethod
    def _info(request: Request, plan: Plan) -> RequestInfo:
        return RequestInfo(
            request.operation,
            request.account,
            request.region,
            tuple(plan.reads),
            tuple((t.table, t.pk) for t in plan.writes),
            MappingProxyType(request.params),
        )

    def _schemas(self, request: Request, plan: Plan, scanned: list[tuple[str, Any, Any]]) -> dict[str, TableSchema]:
        names = {t.table for t in plan.writes} | {t for t, *_ in plan.gets} | {t for t, *_ in scanned}
        schemas = {}
        for name in names:
            schema = self.store.schema(request.account, request.region, name)
            if schema is not None:
                schemas[name] = schema
        return schemas


__all__ = ["DynamoEngine"]

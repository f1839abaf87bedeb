"""The engine: one request through decode -> validate -> weak answer planned -> hooks.before ->
idempotency -> apply -> meter -> hooks.after -> encode, under one lock.

Each stage lives in a room of :mod:`labkit.endpoint` (``wire/``, ``checks/``, ``store/``,
``metering/``, ...); what an operation adds to a stage lives in its own module,
:mod:`labkit.endpoint.operations`, found from the catalogue (:func:`~labkit.endpoint.operations.steps_of`).
A :class:`~labkit.endpoint.errors.ClientFault` from any stage is the answer (a 4xx, nothing
written). Anything else that escapes is an engine bug: the HTTP layer answers 500 and logs it.

The engine imports no plug-in. It is handed its hooks (:mod:`labkit.shared.engine_hooks`) and its
control operations (``X-Amz-Target`` -> handler) by whoever builds it — :mod:`labkit.embedded`
lists labkit's defaults — and plug-ins use only its public methods: :meth:`DynamoEngine.now`,
:meth:`~DynamoEngine.advance_clock`, :meth:`~DynamoEngine.set_clock`, :attr:`~DynamoEngine.generation`,
the hook list and the table views.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..shared import constants as C
from ..shared.catalogue import DATA_PLANE, TOKENED, weak_answer_misuse
from ..shared.engine_hooks import Hook, Rejection, RequestInfo, wants, weak_answer
from ..shared.validation import check_choice, check_non_negative
from .checks.request import validate
from .errors import ClientFault
from .metering.consumed_capacity import meter, replay
from .operations import NO_STEPS, Steps, steps_of
from .plan import Plan
from .schema import SchemaOf, TableSchema
from .store import expiry
from .store.history import ImageHistory
from .store.idempotency import TokenMemory, fingerprint
from .store.restore import is_control_write
from .weak import HEADER, WeakStage
from .wire.decode import DYNAMODB, Request, decode
from .wire.encode import Response, error_response, fault_response, response

if TYPE_CHECKING:
    from .store.moto_store import Applied, MotoStore

#: A control operation: (engine, the request's JSON object) -> (HTTP status, JSON payload).
#: Runs under the engine's lock.
Control = Callable[["DynamoEngine", dict[str, Any]], tuple[int, Mapping[str, Any]]]


class DynamoEngine:
    """Applies DynamoDB JSON requests to moto's DynamoDB, one at a time.

    ``clock`` (seconds, monotonic) is the engine's time: it dates ClientRequestTokens and is the
    ``now`` hooks see (partition buckets, throttling); tests inject a fake one, :meth:`advance_clock`
    moves it forward, :meth:`set_clock` freezes it (a lab owns it) or lets it follow ``clock`` again. ``hooks``
    see every validated data-plane request they want (see :mod:`labkit.shared.engine_hooks`); none by
    default. ``controls`` maps an ``X-Amz-Target`` (e.g. ``"Labkit.SetFaults"``) to the
    :data:`Control` that answers it; any other target is decoded as a DynamoDB request, so an
    engine without controls answers ``Labkit.*`` as DynamoDB answers an unknown operation.
    ``data``: a data directory (``labkit serve --data DIR``): tables are restored from it and every
    write is written there before it is answered (:mod:`labkit.endpoint.store.durable`); None (the
    default): memory only. ``weak_answers``: keep an image history and give DynamoDB's weak answers
    to the requests that ask for one (:mod:`.weak`); False (the default): such a request is a 400.
    :func:`labkit.embedded.build_engine` builds one with labkit's defaults.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        hooks: Iterable[Hook] = (),
        controls: Mapping[str, Control] | None = None,
        data: str | os.PathLike[str] | None = None,
        weak_answers: bool = False,
    ) -> None:
        self.lock = threading.RLock()
        self._clock = clock
        self._advanced = 0.0
        # (``clock()`` when it was frozen, None: it follows ``clock``; the seconds of ``clock`` that passed
        # while it was frozen): one tuple, swapped whole, so :meth:`now` reads it without the lock
        self._mode: tuple[float | None, float] = (None, 0.0)
        #: Epoch seconds at the engine's time 0: the wall clock at start, less the clock's reading then.
        self.epoch_origin = time.time() - self.now()
        from .store.moto_store import MotoStore  # moto takes ~0.3 s to import: only when an engine is built

        self.store: MotoStore = MotoStore(data)
        self.store.replication.clock = self.epoch
        self.tokens = TokenMemory(self.now)
        self._generation = 0
        self._hooks: list[Hook] = list(hooks)
        self._controls: dict[str, Control] = dict(controls or {})
        #: The image history behind ``stale-read`` (:mod:`.weak`); None: the engine gives no weak answers.
        self.history: ImageHistory | None = None
        if weak_answers:
            self.history = ImageHistory()
            self.store.listeners.append(self.history)
        #: The weak-answer stage (:mod:`.weak`): planned once per request, around the store's apply.
        self.weak = WeakStage(self.store, self.history)

    def close(self) -> None:
        """Release what the engine holds beyond memory (its data directory, if it has one)."""
        with self.lock:
            self.store.close()

    # the engine's time -----------------------------------------------------------------------
    def now(self) -> float:
        """The engine's clock: the ``clock`` it was given (stopped while frozen), plus every :meth:`advance_clock`.

        Every time-based behaviour of the engine reads it, and only it: the ClientRequestToken
        window, and the ``now`` its hooks are told (partition buckets and throttling).
        """
        frozen_at, paused = self._mode
        return (self._clock() if frozen_at is None else frozen_at) - paused + self._advanced

    def advance_clock(self, seconds: float) -> float:
        """Move the engine's clock forward by ``seconds`` (>= 0); returns the total advance so far.

        Everything dated by the engine sees it: ClientRequestTokens age (past DynamoDB's 10
        minutes they are forgotten), and hooks get the later ``now`` (token buckets refill).
        Frozen or not, the clock moves by exactly ``seconds``.
        """
        seconds = check_non_negative("seconds", seconds)
        with self.lock:
            self._advanced += seconds
            return self._advanced

    def epoch(self) -> float:
        """The engine's time as Unix epoch seconds, what TTL compares an item's TTL attribute with:
        the wall clock when the engine started, plus the engine's clock since (advances included)."""
        return self.epoch_origin + self.now()

    # Time to Live (:mod:`.store.expiry`) -------------------------------------------------------
    def expired(self, table: str | None = None) -> dict[str, int]:
        """Items expired by :meth:`epoch` and not yet deleted, counted per table name (every
        account and region; ``table``: that table only, whichever account holds it)."""
        with self.lock:
            now = self.epoch()
            counts: dict[str, int] = {}
            for account, region, name in self._ttl_tables(table):
                counts[name] = counts.get(name, 0) + len(expiry.expired_items(self.store, account, region, name, now))
            return counts

    def expire_items(self, table: str | None = None) -> dict[str, int]:
        """Delete every expired item (:meth:`expired`) as DynamoDB's TTL process does: a service
        delete each (:func:`.store.expiry.expire`). How many, per table name."""
        with self.lock:
            now = self.epoch()
            counts: dict[str, int] = {}
            for account, region, name in self._ttl_tables(table):
                counts[name] = counts.get(name, 0) + expiry.expire(self.store, account, region, name, now)
            return counts

    def has_table(self, table: str) -> bool:
        """Does any account and region hold a table named ``table``?"""
        with self.lock:
            return any(table in self.store.table_names(*who) for who in self.store.accounts())

    def _ttl_tables(self, table: str | None) -> list[tuple[str, str, str]]:
        """(account, region, table) of every table (or of every table named ``table``) with TTL on."""
        found = []
        for account, region in self.store.accounts():
            for name in self.store.table_names(account, region):
                if (table is None or name == table) and expiry.ttl_attribute(self.store, account, region, name):
                    found.append((account, region, name))
        return found

    @property
    def clock_mode(self) -> str:
        """``"real"``: the clock follows the ``clock`` it was given; ``"frozen"``: only :meth:`advance_clock`
        moves it."""
        return C.CLOCK_REAL if self._mode[0] is None else C.CLOCK_FROZEN

    def set_clock(self, mode: str) -> str:
        """Freeze the engine's clock (``"frozen"``) or let it follow real time again (``"real"``); returns the
        mode it had. It never goes back: frozen, it stands at the instant it was frozen; thawed, it goes on
        from where it stood (the real seconds that passed while it was frozen never reach it)."""
        check_choice("clock mode", mode, C.CLOCK_MODES)
        with self.lock:
            before = self.clock_mode
            frozen_at, paused = self._mode
            if mode == C.CLOCK_FROZEN and frozen_at is None:
                self._mode = (self._clock(), paused)
            elif mode == C.CLOCK_REAL and frozen_at is not None:
                self._mode = (None, paused + self._clock() - frozen_at)
            return before

    @property
    def generation(self) -> int:
        """Moves whenever a control-plane request (CreateTable, UpdateTable, TagResource, ...)
        reaches the store: a plug-in that caches what it read about tables drops its cache then."""
        return self._generation

    # hooks, controls and plain-data views ----------------------------------------------------
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

    @property
    def controls(self) -> Mapping[str, Control]:
        """The control operations this engine answers, by ``X-Amz-Target`` (read-only)."""
        return MappingProxyType(self._controls)

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
        control = self._controls.get(target)
        if control is not None:
            return self._control(control, body)
        try:
            request = decode(headers, body, self.store.account_of)
            with self.lock:  # global tables: the deliveries it made named in its answer
                return self.store.replication.answering(lambda: self._handle(request))
        except ClientFault as fault:
            if fault.code == "UnknownOperationException" and self._controls:
                fault.message += f"; this endpoint also answers {', '.join(sorted(self._controls))}"
            return fault_response(fault)

    def _control(self, control: Control, body: bytes) -> Response:
        try:
            params: Any = json.loads(body or b"{}")
        except ValueError:
            params = None
        if not isinstance(params, dict):
            return error_response("SerializationException", "a Labkit.* control request's body must be a JSON object")
        with self.lock:
            status, payload = control(self, params)
        return response(status, dict(payload))

    def _handle(self, request: Request) -> Response:
        """decode (done) -> validate -> weak answer planned -> hooks.before -> idempotency -> apply -> meter
        -> hooks.after -> encode."""
        schema_of = self.store.schema_of(request.account, request.region)
        steps = steps_of(request.operation) if request.service == DYNAMODB else NO_STEPS
        plan = validate(request, schema_of, steps.check)
        self.store.replication.before(
            request.account, request.region, plan.writes
        )  # global tables: deliveries due, conflicts
        asked = self.weak.asked(request, plan, schema_of)
        if steps.execute is not None:  # PartiQL: run as data-plane requests
            return self._partiql(request, steps, schema_of, asked is not None)
        if request.service != DYNAMODB or request.operation not in DATA_PLANE:
            return self._control_plane(request, steps)
        hooks = list(self._hooks)
        info = self._info(request, plan) if hooks else None
        if info is not None:
            hooks = [hook for hook in hooks if wants(hook, info)]
        weak = self.weak.plan(request, plan, schema_of, asked, lambda: self._by_rule(request, info, hooks))
        if weak.answered is not None:
            return weak.answered
        request, plan = weak.request, weak.plan
        if weak.narrowed and info is not None:
            info = self._info(request, plan)
        rejection = self._before(hooks, info)
        if rejection is not None and not rejection.apply_first:
            return error_response(rejection.code, rejection.message, rejection.status, **rejection.extra)
        params = request.params
        token = params.get("ClientRequestToken") if request.operation in TOKENED else None
        scope = (request.account, request.region, str(token))
        print_ = fingerprint(params) if token is not None else ""
        if token is not None and (earlier := self.tokens.recall(scope)) is not None:
            return self._replayed(request, token, earlier, print_)
        wanted = params.get("ReturnConsumedCapacity") in ("TOTAL", "INDEXES")
        applied = weak.apply(steps, schema_of, track=wanted or bool(hooks))
        payload = applied.payload
        weak.finish(payload)
        steps.finish(params, payload, plan.parsed_of)
        payload.pop("ConsumedCapacity", None)
        payload.pop("ConsumedCapacityUnits", None)
        if wanted or hooks:
            self._meter(request, plan, applied, hooks, info, payload)
        if token is not None:
            self.tokens.remember(
                scope, print_, tuple((t.table, json.dumps(t.key, sort_keys=True)) for t in plan.writes)
            )
        if rejection is not None:
            return error_response(rejection.code, rejection.message, rejection.status, **rejection.extra)
        return _echo(response(200, payload), weak.echo)

    def _partiql(self, request: Request, steps: Steps, schema_of: SchemaOf, asked: bool) -> Response:
        """A PartiQL request, run as the data-plane request(s) it stands for; a weak answer asked for
        (an ExecuteStatement SELECT) is given by the request it runs as, whose echo is the answer's."""
        echoes: list[str] = []

        def run(sub: Request) -> Response:
            answer = self._handle(sub)
            if HEADER in answer[1]:
                echoes.append(answer[1][HEADER])
            return answer

        assert steps.execute is not None
        found = steps.execute(request, run if asked else self._handle, schema_of)
        return _echo(found, echoes[-1] if echoes and found[0] == 200 else None)

    def _control_plane(self, request: Request, steps: Steps) -> Response:
        """A control-plane request: answered by its step or by moto; it moves :attr:`generation`."""
        self._generation += 1
        answered = steps.answer(self.store, request) if steps.answer is not None else None
        found = answered if answered is not None else self.store.dispatch(request)
        self.store.controlled(request, found[0])
        if is_control_write(request.operation):
            self.weak.control_written(request, found[0])
        return found

    def _before(self, hooks: list[Hook], info: RequestInfo | None) -> Rejection | None:
        """The first hook's refusal, if one refuses."""
        for hook in hooks:
            assert info is not None
            rejection = hook.before(info, self.now())
            if rejection is not None:
                return rejection
        return None

    def _replayed(self, request: Request, token: Any, earlier: Any, print_: str) -> Response:
        """The answer to a ClientRequestToken seen within its window: the same request again, or a 400."""
        if earlier.fingerprint != print_:
            raise ClientFault(
                "IdempotentParameterMismatchException",
                f"ClientRequestToken {token!r} was used within the last {self.tokens.ttl_seconds:g} seconds "
                "for a different request; use a new token for a new request",
            )
        payload: dict[str, Any] = {}
        mode = str(request.params.get("ReturnConsumedCapacity", "NONE"))
        if mode in ("TOTAL", "INDEXES"):
            items = [(t, self.store.item(request.account, request.region, t, json.loads(k))) for t, k in earlier.keys]
            payload["ConsumedCapacity"] = replay(items, mode)
        return response(200, payload)

    def _meter(
        self,
        request: Request,
        plan: Plan,
        applied: Applied,
        hooks: list[Hook],
        info: RequestInfo | None,
        payload: dict[str, Any],
    ) -> None:
        """The capacity the request consumed: into its answer when asked, and to each hook's ``after``."""
        metered = meter(
            request.operation,
            request.params,
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
            hook.after(info, MappingProxyType(metered.partitions), self.now())

    def _by_rule(self, request: Request, info: RequestInfo | None, hooks: list[Hook]) -> str | None:
        """The weak answer a hook gives a request that did not ask for one (an endpoint fault rule)."""
        if info is None:
            return None
        for hook in hooks:
            kind = weak_answer(hook, info, self.now())
            if kind is not None and weak_answer_misuse(kind, request.operation, request.params) is None:
                return kind
        return None

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


def _echo(answer: Response, echo: str | None) -> Response:
    """The answer, with the weak-answer header saying what was done (when one was asked for)."""
    if echo is not None:
        answer[1][HEADER] = echo
    return answer


__all__ = ["Control", "DynamoEngine"]

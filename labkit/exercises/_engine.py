"""The checker's machinery: a throw-away table, the learner's function as actors, and guards.

Every check gets its own table ``labkit-ex-<name>-<random>`` (deleted afterwards), so a solution
that deletes its table or writes rubbish cannot spoil the next check. The learner's function runs
as race-lab actors (:func:`labkit.races.run_interleaving`, :func:`labkit.races.all_interleavings`,
:func:`labkit.races.stress`); every DynamoDB call it makes is also recorded with its parameters
(``before-parameter-build``), which is what lets an exercise say *which* classic mistake it saw.
"""

from __future__ import annotations

import copy
import ctypes
import inspect
import math
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import ClientError

from .. import Connection
from ..errors import RaceError, ValidationError
from ..invariants import scan_rows
from ..races import Interleaving, all_interleavings, run_interleaving, stress
from ..table import reset_table
from ._verdict import NOT_SOLVED, Finding

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: Who the actors are, in the checker's sentences.
PEOPLE: Mapping[str, str] = {"A": "Ada", "B": "Bob", "C": "Cy"}
#: Operations that change items (everything else that is not a read is refused outright).
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems", "DescribeTable"})
#: The most orders one race may take (stops a solution with dozens of calls from taking minutes).
MAX_ORDERS = 200

Item = dict[str, Any]
_serializer = TypeSerializer()


class Stop(Exception):
    """Ends a check with one finding (internal)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class _Killed(BaseException):
    """Injected into a learner's thread that outlived its timeout, so it stops burning a core."""


@dataclass(frozen=True)
class Call:
    """One DynamoDB call the solution made: who, which operation, the parameters it passed."""

    actor: str
    operation: str
    params: Mapping[str, Any]

    @property
    def is_write(self) -> bool:
        return self.operation in WRITES

    def actions(self) -> list[tuple[str, Mapping[str, Any]]]:
        """(action, body) of each write: ("Put", {...}) for a PutItem or each transaction action."""
        op, p = self.operation, self.params
        if op == "TransactWriteItems":
            return [next(iter(a.items())) for a in p.get("TransactItems", []) if isinstance(a, Mapping)]
        if op in ("PutItem", "UpdateItem", "DeleteItem"):
            return [(op.removesuffix("Item"), p)]
        return []

    @property
    def conditional(self) -> bool:
        """Every write action of this call carries a ConditionExpression."""
        acts = self.actions()
        return bool(acts) and all("ConditionExpression" in body for _, body in acts)


@dataclass
class Outcome:
    """One run of the solution: what it returned or raised, and the calls it made."""

    actor: str
    args: tuple[Any, ...]
    value: Any = None
    exc: Exception | None = None
    calls: list[Call] = field(default_factory=list)
    turns: int = 0

    @property
    def ok(self) -> bool:
        return self.exc is None


def person(actor: str) -> str:
    if actor in PEOPLE:
        return PEOPLE[actor]
    return f"worker {actor.removeprefix('w')}" if actor.startswith("w") else actor


def last_line(exc: BaseException) -> str:
    """The last line of the exception's traceback (``ZeroDivisionError: division by zero``)."""
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def _s(av: Any) -> str:
    if isinstance(av, Mapping) and len(av) == 1:
        return str(next(iter(av.values())))
    return str(av)


def typed(item: Mapping[str, Any]) -> dict[str, Any]:
    """Plain Python values -> DynamoDB's typed JSON."""
    return {k: _serializer.serialize(v) for k, v in item.items()}


def signature_problem(solution: Any, expected: str, sample: Sequence[Any]) -> Finding | None:
    """None when ``solution(client, table_name, *sample)`` binds; else a wrong-signature finding."""
    if not callable(solution):
        return Finding(
            "wrong-signature",
            f"the solution is a {type(solution).__name__}, not a function; define `def solution{expected}:`",
        )
    try:
        sig = inspect.signature(solution)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(object(), "table", *sample)
    except TypeError as exc:
        name = getattr(solution, "__name__", "solution")
        return Finding(
            "wrong-signature",
            f"the checker calls solution{expected}, but yours is {name}{sig} ({exc}); change its parameters to match",
        )
    return None


@dataclass
class Broke:
    """A forced order that broke an invariant: the run, the outcomes, the table afterwards."""

    res: Interleaving
    outcomes: dict[str, Outcome]
    items: list[Item]
    problem: str


Judge = Callable[[dict[str, Outcome], list[Item]], str | None]
Explain = Callable[[Broke], Finding]


class Runner:
    """Runs one solution against one throw-away table; exercises script their checks with it."""

    def __init__(
        self,
        solution: Callable[..., Any],
        conn: Connection,
        timeout: float,
        documented: tuple[type[Exception], ...],
        allowed: Callable[[str, str], bool],
        keys_hint: str,
    ) -> None:
        self.solution = solution
        self.conn = conn
        self.table = conn.table_name
        self.timeout = timeout
        self.documented = documented
        self.allowed = allowed
        self.keys_hint = keys_hint
        self.calls: list[Call] = []
        self.threads: set[int] = set()
        self._lock = threading.Lock()
        self.orders = 0
        self.races = 0
        self.solos = 0
        self.storm_ops = 0
        self.notes: list[str] = []
        self._last_items: list[Item] | None = None

    # ------------------------------------------------------------ plumbing

    def _record_on(self, client: DynamoDBClient, actor: str) -> None:
        calls = self.calls_sink

        def record(params: Mapping[str, Any], model: Any, **_: Any) -> None:
            calls().append(Call(actor, str(model.name), copy.deepcopy(dict(params))))

        client.meta.events.register(
            "before-parameter-build.dynamodb", record, unique_id=f"labkit-exercise-{id(self)}-{actor}"
        )

    def calls_sink(self) -> list[Call]:
        return self.calls

    def actor(self, actor: str, args: tuple[Any, ...]) -> Callable[[DynamoDBClient], Outcome]:
        """The solution as a race-lab actor: it never raises an Exception, it returns an Outcome."""

        def run(client: DynamoDBClient) -> Outcome:
            self._record_on(client, actor)
            ident = threading.get_ident()
            with self._lock:
                self.threads.add(ident)
            out = Outcome(actor, args)
            try:
                out.value = self.solution(client, self.table, *args)
            except Exception as exc:  # judged by the checker, never a crash of the race lab
                out.exc = exc
            finally:
                with self._lock:
                    self.threads.discard(ident)
            return out

        return run

    def kill(self) -> None:
        """Stop learner threads still running after a timeout (they would spin forever)."""
        with self._lock:
            idents = list(self.threads)
        for ident in idents:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Killed))

    def _timed_out(self, what: str, detail: str = "") -> Stop:
        self.kill()
        return Stop(
            Finding(
                "timeout",
                f"{what} did not finish within the {self.timeout:g} s timeout{detail}: does it loop "
                "forever, wait for something, or retry without end? Every call must return; "
                "a retry loop needs a fresh read each time round",
            )
        )

    # ------------------------------------------------------------ the table

    def reset(self, items: Sequence[Item]) -> None:
        """Empty the table, then write ``items`` (plain Python values); forget recorded calls."""
        if self._last_items is not None:  # this check's own table: delete what is there, in batches
            self._batch(
                [{"DeleteRequest": {"Key": {"PK": {"S": i["PK"]}, "SK": {"S": i["SK"]}}}} for i in self.items()]
            )
        else:  # the first reset goes through labkit.table (creates the table, checks it is labkit's)
            reset_table(self.conn)
        self._batch([{"PutRequest": {"Item": typed(item)}} for item in items])  # never both on one key
        self._last_items = list(items)
        self.calls = []

    def _batch(self, writes: list[dict[str, Any]]) -> None:
        for start in range(0, len(writes), 25):
            request: dict[str, Any] = {self.table: writes[start : start + 25]}
            while request:
                request = self.conn.client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}

    def items(self) -> list[Item]:
        """Every item in the table now (plain values); a missing table ends the check."""
        try:
            return scan_rows(self.conn.client, self.table)
        except ClientError as exc:
            if "ResourceNotFound" in str(exc):
                raise Stop(
                    Finding(
                        "deleted-table",
                        "your solution deleted the table: the check "
                        "cannot go on. A solution only ever touches its own items; "
                        "never call DeleteTable",
                    )
                ) from None
            raise

    # ------------------------------------------------------------ guards

    def guard(self, calls: Sequence[Call], res: Interleaving | None = None) -> None:
        """No DeleteTable, no other table, no key outside the exercise's keys."""
        order = res.label if res is not None else None
        for call in calls:
            who = person(call.actor)
            if call.operation == "DeleteTable":
                raise Stop(
                    Finding(
                        "deleted-table",
                        f"{who}'s call DeleteTable deleted the table; a solution only ever touches its own items",
                        order,
                        res,
                    )
                )
            if call.operation not in WRITES | READS:
                raise Stop(
                    Finding(
                        "outside-keys",
                        f"{who} called {call.operation}, which this exercise never needs; touch only {self.keys_hint}",
                        order,
                        res,
                    )
                )
            for table in _tables(call):
                if table != self.table:
                    raise Stop(
                        Finding(
                            "outside-keys",
                            f"{who}'s {call.operation} wrote to table {table!r}, not the table it was given",
                            order,
                            res,
                        )
                    )
            for pk, sk in _write_keys(call):
                if not self.allowed(pk, sk):
                    raise Stop(
                        Finding(
                            "outside-keys",
                            f"{who}'s {call.operation} wrote "
                            f"PK={pk!r}, SK={sk!r}, outside this exercise's keys: "
                            f"touch only {self.keys_hint}",
                            order,
                            res,
                        )
                    )

    def check_raised(self, out: Outcome, res: Interleaving | None = None) -> None:
        """A stub is 'not solved yet'; an error that is not documented fails with its last line."""
        exc = out.exc
        if exc is None or isinstance(exc, self.documented):
            return
        if isinstance(exc, NotImplementedError):
            raise Stop(
                Finding(
                    NOT_SOLVED,
                    "not solved yet: the solution still raises "
                    "NotImplementedError. Replace `raise NotImplementedError` with your "
                    "code, then run the check again",
                )
            )
        allowed = " or ".join(e.__name__ for e in self.documented)
        rule = (
            f"the only errors this exercise may raise are {allowed}"
            if allowed
            else "this exercise's function must not raise"
        )
        raise Stop(
            Finding(
                "error",
                f"{person(out.actor)}'s call {_call_text(out.args)} raised {last_line(exc)} — {rule}",
                res.label if res is not None else None,
                res,
            )
        )

    # ------------------------------------------------------------ runs

    def solo(self, actor: str, *args: Any) -> Outcome:
        """Run the solution once, alone; guards applied, a stub or crash ends the check."""
        start = len(self.calls)
        try:
            res = run_interleaving({actor: self.actor(actor, args)}, [], conn=self.conn, timeout=self.timeout)
        except RaceError as exc:
            raise self._timed_out(
                f"{person(actor)}'s call {_call_text(args)}",
                f" (running alone: {exc})" if "timed out" not in str(exc) else "",
            ) from None
        self.solos += 1
        out: Outcome = res.results[actor]
        out.calls = self.calls[start:]
        out.turns = len(res.history)
        self.guard(out.calls)
        self.check_raised(out)
        if out.exc is None and out.turns == 0:
            raise Stop(
                Finding(
                    "wrong-client",
                    f"{person(actor)}'s call {_call_text(args)} returned but made no DynamoDB call with "
                    "the client it was given. Use the `client` and `table_name` parameters (not "
                    "conn.client or a new boto3 client): the checker gives each concurrent caller its "
                    "own client, which is how it forces the orders",
                )
            )
        return out

    def race(self, actors: Mapping[str, tuple[Any, ...]], seed: Sequence[Item], judge: Judge, explain: Explain) -> int:
        """Every order of the actors' calls (counted from a run of each alone after the seed).

        After each order: guards, ``judge(outcomes, items)`` -> a problem or None, then the
        errors check. The first order with a problem ends the check with ``explain(broke)``.
        Returns the number of orders tried.
        """
        calls: dict[str, int] = {}
        for name, args in actors.items():
            self.reset(seed)
            calls[name] = self.solo(name, *args).turns
        total = math.factorial(sum(calls.values()))
        for n in calls.values():
            total //= math.factorial(n)
        if total > MAX_ORDERS:
            raise Stop(
                Finding(
                    "too-many-calls",
                    f"your function makes {max(calls.values())} "
                    f"DynamoDB calls per run, which gives {total:,} orders to try; "
                    "the patterns here need one to three calls",
                )
            )
        wrapped = {name: self.actor(name, args) for name, args in actors.items()}
        tried = 0
        self.races += 1

        def outcome(res: Interleaving) -> dict[str, Any]:
            nonlocal tried
            tried += 1
            outs: dict[str, Outcome] = {}
            for name in actors:
                out = res.results[name]
                out.calls = [c for c in self.calls if c.actor == name]
                outs[name] = out
            self.guard(self.calls, res)
            for out in outs.values():
                if isinstance(out.exc, NotImplementedError):
                    self.check_raised(out, res)
            items = self.items()
            problem = judge(outs, items)
            if problem is not None:
                raise Stop(explain(Broke(res, outs, items, problem)))
            for out in outs.values():
                self.check_raised(out, res)
            return {}

        try:
            all_interleavings(
                wrapped,
                conn=self.conn,
                setup=lambda: self.reset(seed),
                outcome=outcome,
                calls=calls,
                timeout=self.timeout,
            )
        except RaceError as exc:
            who = " and ".join(person(a) for a in actors)
            raise self._timed_out(f"the race between {who}", f" ({exc})") from None
        finally:
            self.orders += tried
        return tried

    def storm(
        self,
        seed: Sequence[Item],
        args_of: Callable[[int, int], tuple[Any, ...]],
        judge: Judge,
        *,
        threads: int = 4,
        ops: int = 3,
        explain: Callable[[list[Call], str], tuple[str, str]] | None = None,
    ) -> list[Outcome]:
        """``threads`` workers x ``ops`` calls at once (labkit.races.stress), bounded by a join."""
        self.reset(seed)
        outs: list[Outcome] = []

        def op(client: DynamoDBClient, worker: int, seq: int) -> None:
            outs.append(self.actor(f"w{worker}", args_of(worker, seq))(client))

        box: dict[str, BaseException] = {}

        def body() -> None:
            try:
                stress(op, conn=self.conn, threads=threads, ops=ops, progress=False)
            except BaseException as exc:  # reported below
                box["exc"] = exc

        runner = threading.Thread(target=body, name="labkit-exercise-storm", daemon=True)
        runner.start()
        runner.join(self.timeout * 2)
        if runner.is_alive():
            raise self._timed_out(
                f"the storm of {threads} workers x {ops} calls", f" (bounded at {self.timeout * 2:g} s)"
            )
        if "exc" in box:
            raise box["exc"]
        self.storm_ops += len(outs)
        self.guard(self.calls)
        for out in outs:
            if isinstance(out.exc, NotImplementedError):
                self.check_raised(out)
        items = self.items()
        problem = judge({f"{o.actor}#{i}": o for i, o in enumerate(outs)}, items)
        if problem is not None:
            kind, words = explain(self.calls, problem) if explain is not None else ("storm", "")
            raise Stop(
                Finding(
                    kind,
                    f"a storm of {threads} workers x {ops} calls at once broke it: {problem}"
                    + (f": {words}" if words else ""),
                )
            )
        for out in outs:
            self.check_raised(out)
        return outs

    def summary(self) -> str:
        """What was run, in words: "4 runs alone, 6 forced orders in 1 race, 12 calls in a storm"."""
        parts = [(self.solos, "run alone", "runs alone"), (self.orders, "forced order", "forced orders")]
        words = [f"{n} {one if n == 1 else many}" for n, one, many in parts if n]
        if self.races:
            words[-1] += f" in {self.races} race{'s' if self.races > 1 else ''}"
        if self.storm_ops:
            words.append(f"{self.storm_ops} calls in a storm")
        return ", ".join(words)


def _call_text(args: tuple[Any, ...]) -> str:
    return "solution(client, table_name, " + ", ".join(repr(a) for a in args) + ")"


def _tables(call: Call) -> list[str]:
    p = call.params
    if call.operation == "TransactWriteItems":
        return [str(body.get("TableName")) for _, body in call.actions()]
    if call.operation == "BatchWriteItem":
        return [str(t) for t in (p.get("RequestItems") or {})]
    if call.is_write:
        return [str(p.get("TableName"))]
    return []


def _write_keys(call: Call) -> list[tuple[str, str]]:
    keys: list[Mapping[str, Any]] = []
    for _, body in call.actions():
        found = body.get("Key") or body.get("Item")
        if isinstance(found, Mapping):
            keys.append(found)
    if call.operation == "BatchWriteItem":
        for requests in (call.params.get("RequestItems") or {}).values():
            for r in requests:
                for body in r.values():
                    found = body.get("Key") or body.get("Item")
                    if isinstance(found, Mapping):
                        keys.append(found)
    return [(_s(k.get("PK")), _s(k.get("SK"))) for k in keys]


def uses(calls: Sequence[Call], operation: str, **has: Any) -> bool:
    """Whether any call is ``operation`` (and has the given parameters, if any)."""
    return any(c.operation == operation and all(c.params.get(k) == v for k, v in has.items()) for c in calls)


__all__ = [
    "Broke",
    "Call",
    "Outcome",
    "Runner",
    "Stop",
    "ValidationError",
    "last_line",
    "person",
    "signature_problem",
    "typed",
    "uses",
]

"""One trial of a solution: a throw-away table, the learner's function as actors, timeouts.

Every check gets its own table ``labkit-ex-<name>-<random>`` (deleted afterwards), so a solution
that deletes its table or writes rubbish cannot spoil the next check. The learner's function runs
as race-lab actors (:func:`labkit.races.run_interleaving`, :func:`labkit.races.all_interleavings`,
:func:`labkit.races.stress`); every DynamoDB call it makes is also recorded with its parameters
(``before-parameter-build``), which is what lets an exercise say *which* classic mistake it saw.
The records live in :mod:`.outcomes`, the rules each run must keep in :mod:`.rules`.
"""

from __future__ import annotations

import copy
import ctypes
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ... import Connection
from ...races import Interleaving, all_interleavings, count_orders, run_interleaving, stress
from ...shared.catalogue import WRITES
from ...shared.errors import RaceError
from ...shared.table import reset_table
from ..invariants import scan_rows
from .outcomes import Broke, Explain, Item, Judge, Outcome, RecordedCall, Stop, call_text, person, typed
from .rules import check_calls, check_raised
from .verdict import Finding

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: The most orders one race may take (stops a solution with dozens of calls from taking minutes).
MAX_ORDERS = 200
#: The DynamoDB calls one actor may make in a row while no write by anyone succeeds. Every pattern of
#: the exercises needs one to three calls a try, and a try of a sound retry loop fails only because
#: another caller's write succeeded (progress, which starts the count again). A loop that resends a
#: request that can no longer succeed (a condition on a version it never reads again) makes no
#: progress: it is judged by what it does, after this many calls, not by the seconds it took.
SPIN_CALLS = 20
#: DynamoDB's answer to a write whose condition failed (a single-item write, or a transaction).
_REFUSED = ("ConditionalCheckFailedException", "TransactionCanceledException")


class _Killed(BaseException):
    """Injected into a learner's thread that outlived its timeout, so it stops burning a core."""


class _Spinning(BaseException):
    """Raised out of a learner's DynamoDB call once it made :data:`SPIN_CALLS` calls without progress
    (``except Exception`` in a retry loop cannot swallow it)."""


class Trial:
    """One check of one solution against one throw-away table; each exercise scripts its check with it."""

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
        self.calls: list[RecordedCall] = []
        self.threads: set[int] = set()
        self._lock = threading.Lock()
        self.orders = 0
        self.races = 0
        self.solos = 0
        self.storm_ops = 0
        self.notes: list[str] = []
        self._last_items: list[Item] | None = None
        #: Per actor, since the last write by anyone succeeded: its calls, and its refused writes.
        self._idle: dict[str, int] = {}
        self._refused: dict[str, int] = {}
        self._where = "running alone"
        self.spin: Finding | None = None

    # ------------------------------------------------------------ plumbing

    def _record_on(self, client: DynamoDBClient, actor: str) -> None:
        calls = self.calls_sink

        def record(params: Mapping[str, Any], model: Any, **_: Any) -> None:
            calls().append(RecordedCall(actor, str(model.name), copy.deepcopy(dict(params))))
            self._count_call(actor)

        def answered(http_response: Any, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
            self._count_answer(actor, str(model.name), int(http_response.status_code), parsed)

        unique = f"labkit-exercise-{id(self)}-{actor}"  # one emitter's ids are shared by all its events
        client.meta.events.register("before-parameter-build.dynamodb", record, unique_id=unique)
        client.meta.events.register("after-call.dynamodb", answered, unique_id=f"{unique}-answer")

    def _count_call(self, actor: str) -> None:
        """Before a call: past :data:`SPIN_CALLS` answers without progress, the actor is stopped (:attr:`spin`)."""
        with self._lock:
            if self._idle.get(actor, 0) < SPIN_CALLS:
                return
            if self.spin is None:
                refused = self._refused.get(actor, 0)
                self.spin = Finding(
                    "endless-retry",
                    f"{person(actor)} made {SPIN_CALLS} DynamoDB calls in a row ({refused} of them writes refused "
                    f"by their condition) while no write by anyone succeeded, {self._where}: a retry loop that "
                    "sends the same request again cannot succeed once it has lost. A retry loop needs a fresh "
                    "read each time round (and a bound)",
                )
        raise _Spinning

    def _count_answer(self, actor: str, operation: str, status: int, parsed: Mapping[str, Any]) -> None:
        """A write that succeeded is progress for everyone; any other answer is one more call without it."""
        with self._lock:
            if operation in WRITES and status < 300:
                self._idle.clear()
                self._refused.clear()
                return
            self._idle[actor] = self._idle.get(actor, 0) + 1
            if parsed.get("Error", {}).get("Code") in _REFUSED:
                self._refused[actor] = self._refused.get(actor, 0) + 1

    def _no_spin(self) -> None:
        """End the check with the endless-retry finding if an actor was stopped for it."""
        if self.spin is not None:
            raise Stop(self.spin)

    def calls_sink(self) -> list[RecordedCall]:
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
            except _Spinning:  # stopped for making no progress: the run ends, the check reports it
                pass
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
        puts = [{"PutRequest": {"Item": typed(item)}} for item in items]
        deletes = []
        if self._last_items is not None:  # this check's own table: delete what is there and not put again
            kept = {(i["PK"], i["SK"]) for i in items}
            deletes = [
                {"DeleteRequest": {"Key": {"PK": {"S": i["PK"]}, "SK": {"S": i["SK"]}}}}
                for i in self.items()
                if (i["PK"], i["SK"]) not in kept
            ]
        else:  # the first reset goes through labkit.shared.table (creates the table, checks it is labkit's)
            reset_table(self.conn)
        self._batch(deletes + puts)  # one batch writes a key once: a put replaces the whole item
        self._last_items = list(items)
        self.calls = []
        with self._lock:
            self._idle.clear()
            self._refused.clear()

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

    def guard(self, calls: Sequence[RecordedCall], res: Interleaving | None = None) -> None:
        """No DeleteTable, no other table, no key outside the exercise's keys (see :func:`check_calls`)."""
        check_calls(calls, table=self.table, allowed=self.allowed, keys_hint=self.keys_hint, res=res)

    def check_raised(self, out: Outcome, res: Interleaving | None = None) -> None:
        """A stub is 'not solved yet'; an error that is not documented fails with its last line."""
        check_raised(out, self.documented, res)

    # ------------------------------------------------------------ runs

    def solo(self, actor: str, *args: Any) -> Outcome:
        """Run the solution once, alone; guards applied, a stub or crash ends the check."""
        start = len(self.calls)
        self._where = "running alone"
        try:
            res = run_interleaving({actor: self.actor(actor, args)}, [], conn=self.conn, timeout=self.timeout)
        except RaceError as exc:
            self._no_spin()
            raise self._timed_out(
                f"{person(actor)}'s call {call_text(args)}",
                f" (running alone: {exc})" if "timed out" not in str(exc) else "",
            ) from None
        self._no_spin()
        self.solos += 1
        out: Outcome = res.results[actor]
        out.calls = self.calls[start:]
        out.turns = len(res.history)
        self.guard(out.calls)
        self.check_raised(out)
        if out.exc is None and (out.turns == 0 or len(out.calls) < out.turns):
            made = (
                "made no DynamoDB call with the client it was given"
                if not out.calls
                else f"made {out.turns - len(out.calls)} of its {out.turns} DynamoDB calls on another client"
            )
            raise Stop(
                Finding(
                    "wrong-client",
                    f"{person(actor)}'s call {call_text(args)} returned but {made}. Use the `client` and "
                    "`table_name` parameters (not conn.client or a new boto3 client): the checker gives "
                    "each concurrent caller its own client, which is how it checks every call it makes",
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
        total = count_orders(calls)
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
        who = " and ".join(person(a) for a in actors)
        self._where = f"in the race between {who}"

        def outcome(res: Interleaving) -> dict[str, Any]:
            nonlocal tried
            tried += 1
            self._no_spin()
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
            self._no_spin()
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
        explain: Callable[[list[RecordedCall], str], tuple[str, str]] | None = None,
    ) -> list[Outcome]:
        """``threads`` workers x ``ops`` calls at once (labkit.races.stress), bounded by a join."""
        self.reset(seed)
        self._where = f"in a storm of {threads} workers x {ops} calls"
        outs: list[Outcome] = []

        def op(client: DynamoDBClient, worker: int, seq: int) -> None:
            outs.append(self.actor(f"w{worker}", args_of(worker, seq))(client))

        box: dict[str, BaseException] = {}

        def body() -> None:
            try:
                stress(op, conn=self.conn, threads=threads, ops=ops, progress=False)
            except BaseException as exc:  # reported below
                box["exc"] = exc

        storm_thread = threading.Thread(target=body, name="labkit-exercise-storm", daemon=True)
        storm_thread.start()
        storm_thread.join(self.timeout * 2)
        if storm_thread.is_alive():
            self._no_spin()
            raise self._timed_out(
                f"the storm of {threads} workers x {ops} calls", f" (bounded at {self.timeout * 2:g} s)"
            )
        self._no_spin()
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


__all__ = ["MAX_ORDERS", "Trial"]

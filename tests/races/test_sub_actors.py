"""Threads and pool tasks an actor starts are sub-actors: A.1, A.2 ... with turns of their own.

A transfer that reads both balances in a ThreadPoolExecutor, then writes: its read-modify-write
version loses money and is found; its transactional version passes; never a determinism error
(the actor's two pool threads used to race each other for its turn). Orders, histories and
counterexamples name the sub-actors and replay exactly. A thread that outlives its actor, or
one started after it returned, is a RaceError naming it.

The slow check runs both explorations 10 times in a row with two busy processes saturating the
CPU: the same verdict, the same runs and the same counterexample every time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.races import Exploration, Interleaving, explore, run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.errors import RaceError
from tests.helpers import busy_loops
from tests.races.bank import Accounts, account

#: A run here ends at its error after a call or two; this bound is only the stall guard (a hang), so its size is free.
GUARD_SECONDS = 60.0

Actor = Callable[[], Any]


class Bank(Accounts):
    """Two accounts, x and y, 100 each; transfers between them, fanned out in a pool."""

    def both(self, src: str, dst: str) -> tuple[tuple[int, int], tuple[int, int]]:
        """Both balances, read at once in a pool (as services fan reads out)."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            a, b = pool.submit(self.read, src), pool.submit(self.read, dst)
            return a.result(), b.result()

    def rmw(self, src: str, dst: str, amount: int) -> Actor:
        """Read both in a pool, then write both: loses a concurrent transfer's update."""

        def actor() -> str:
            (a, va), (b, vb) = self.both(src, dst)
            for name, bal, v in ((src, a - amount, va), (dst, b + amount, vb)):
                self.client.put_item(
                    TableName=self.table, Item={**account(name), "bal": {"N": str(bal)}, "v": {"N": str(v)}}
                )
            return "moved"

        return actor

    def transactional(self, src: str, dst: str, amount: int) -> Actor:
        """Read both in a pool, then one transaction guarded by both versions; retried when it lost."""

        def actor() -> str:
            while True:
                (a, va), (b, vb) = self.both(src, dst)
                try:
                    self.client.transact_write_items(
                        TransactItems=[self.guard(src, a - amount, va), self.guard(dst, b + amount, vb)]
                    )
                    return "moved"
                except ClientError as exc:
                    if exc.response["Error"]["Code"] != "TransactionCanceledException":
                        raise

        return actor

    def conserved(self, res: Interleaving) -> None:
        x, y = self.read("x")[0], self.read("y")[0]
        assert (x, y) == (95, 105), f"x={x}, y={y} after moving 10 x->y and 5 y->x: a transfer was lost"


@pytest.fixture
def bank(tconn: Connection) -> Bank:
    return Bank(tconn)


def transfers(make: Callable[[str, str, int], Actor]) -> dict[str, Actor]:
    return {"A": make("x", "y", 10), "B": make("y", "x", 5)}


def explore_bank(bank: Bank, make: Callable[[str, str, int], Actor]) -> Exploration:
    return explore(transfers(make), conn=bank.conn, setup=bank.setup, invariant=bank.conserved)


def test_pool_fan_out__read_modify_write__the_lost_transfer_is_found_and_replays(bank: Bank) -> None:
    """The pool's reads are A.1, A.2 (B.1, B.2); the counterexample names them and replays exactly."""
    result = explore_bank(bank, bank.rmw)
    assert not result.passed, result.summary()
    assert result.calls == {"A": 2, "A.1": 1, "A.2": 1, "B": 2, "B.1": 1, "B.2": 1}
    assert result.counterexample is not None
    assert {"A.1", "A.2", "B.1", "B.2"} <= set(result.counterexample.split())
    assert result.interleaving is not None
    assert set(result.interleaving.history["actor"]) == {"A", "A.1", "A.2", "B", "B.1", "B.2"}
    for _ in range(3):
        bank.setup()
        replay = run_interleaving(transfers(bank.rmw), result.counterexample, conn=bank.conn)
        assert " ".join(replay.turns) == result.counterexample
        with pytest.raises(AssertionError, match="a transfer was lost"):
            bank.conserved(replay)


def test_pool_fan_out__transactional__passes_with_a_true_guarantee(bank: Bank) -> None:
    """The version-guarded transaction passes every non-equivalent order, sub-actors and retries included."""
    result = explore_bank(bank, bank.transactional)
    assert result.passed, result.summary()
    assert result.strategy in ("exhaustive", "dpor")
    assert "explored" in result.guarantee


def test_sub_actors__a_race_between_an_actors_own_threads_is_explored(tconn: Connection) -> None:
    """Two threads of one actor increment one counter by read-modify-write: explore finds the race."""
    table = tconn.table_name
    client = tconn.new_client(retries={"total_max_attempts": 1, "mode": "standard"})
    key = {"PK": {"S": "C"}, "SK": {"S": "N"}}

    def bump() -> None:
        n = int(client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["n"]["N"])
        client.put_item(TableName=table, Item={**key, "n": {"N": str(n + 1)}})

    def twice() -> None:
        threads = [threading.Thread(target=bump) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def other() -> None:
        client.get_item(TableName=table, Key=key, ConsistentRead=True)

    def setup() -> None:
        tconn.client.put_item(TableName=table, Item={**key, "n": {"N": "0"}})

    def both_landed(res: Interleaving) -> None:
        n = int(tconn.client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["n"]["N"])
        assert n == 2, f"n = {n}: one of A's threads overwrote the other"

    result = explore({"A": twice, "B": other}, conn=tconn, setup=setup, invariant=both_landed)
    assert not result.passed
    assert result.counterexample is not None
    turns = result.counterexample.split()
    assert set(turns[:2]) == set(turns[2:4]) == {"A.1", "A.2"}  # both threads read, then both write


def test_sub_actor__outlives_its_actor__race_error_names_it(tconn: Connection) -> None:
    """An actor that returns while the task it submitted still runs: the run fails, naming the task.

    The task waits for an event nobody sets during the run, so it is still running when its actor
    returns, however the threads are scheduled. (Without the wait, a task that finishes its one call
    before its actor returns is not caught: decision 136.)"""
    table = tconn.table_name
    client = tconn.new_client()
    pool = ThreadPoolExecutor(max_workers=1)
    later = threading.Event()

    def task() -> None:
        later.wait(10)
        client.get_item(TableName=table, Key=account("x"))

    try:

        def fire_and_forget() -> None:
            pool.submit(task)

        with pytest.raises(RaceError, match=r"actor 'A' returned while pool task 'A.1' it started was still running"):
            run_interleaving({"A": fire_and_forget}, "A.1", conn=tconn, timeout=GUARD_SECONDS)
    finally:
        later.set()
        pool.shutdown()


def test_sub_actor__order_names_a_thread_never_started__race_error(tconn: Connection) -> None:
    """An order that gives a turn to a sub-actor the actor never starts: one clear error."""
    table = tconn.table_name
    client = tconn.new_client()

    def plain() -> None:
        client.get_item(TableName=table, Key=account("x"))

    with pytest.raises(RaceError, match=r"the order gives 'A.1' a turn, but no such thread was started"):
        run_interleaving({"A": plain}, "A A.1", conn=tconn, timeout=GUARD_SECONDS)


# ---------------------------------------------------------------- the acceptance check, under load


@pytest.fixture
def busy_cpu() -> Iterator[None]:
    """Two busy loops that keep both cores busy for the test's duration."""
    with busy_loops(2):
        yield


@pytest.mark.slow
def test_pool_fan_out__ten_runs_in_a_row_with_the_cpu_saturated__same_verdicts(bank: Bank, busy_cpu: None) -> None:
    """RMW found, transactional passes, 10 times each, with two busy processes: identical every time."""
    found = [explore_bank(bank, bank.rmw) for _ in range(10)]
    proved = [explore_bank(bank, bank.transactional) for _ in range(10)]
    assert all(not r.passed for r in found)
    assert len({(r.counterexample, r.runs, r.original) for r in found}) == 1
    assert all(r.passed for r in proved)
    assert len({(r.runs, r.guarantee) for r in proved}) == 1


def test_faults_at_sub_actors_calls__named_with_a_hash__placed_and_replayed(bank: Bank) -> None:
    """explore places faults at the pool tasks' calls too ('A.1#1: lose-response'); a lost answer there
    reaches the actor through its future; the failure it finds replays with its fault."""
    from labkit.races.scenarios import fault_scenarios

    assert fault_scenarios({"A.1": ["GetItem"]}, ["lose-response"]) == [(), ("A.1#1: lose-response",)]
    actors = transfers(bank.transactional)
    result = explore(actors, conn=bank.conn, setup=bank.setup, invariant=bank.conserved, faults=["lose-response"])
    assert result.scenarios == 7  # no fault; A1, A.1#1, A.2#1, B1, B.1#1, B.2#1
    assert not result.passed and result.faults == ("A1: lose-response",), result.summary()
    bank.setup()
    replay = run_interleaving(actors, result.counterexample or "", conn=bank.conn, faults=list(result.faults))
    assert " ".join(replay.turns) == result.counterexample
    with pytest.raises(AssertionError, match="a transfer was lost"):
        bank.conserved(replay)
    bank.setup()
    lost_read = run_interleaving(actors, "A.1 A.2 B.1 B.2 B", conn=bank.conn, faults=["A.1#1: lose-response"])
    assert list(lost_read.history["injected"].fillna("")) == ["lose-response", "", "", "", ""]
    assert lost_read.error_codes() == {"A": "ReadTimeoutError"}


# ---------------------------------------------------------------- the ways code fans out


class Fans:
    """Three counters K0-K2 and the ways services fan their calls out."""

    def __init__(self, conn: Connection) -> None:
        self.table = conn.table_name
        self.client: Any = conn.new_client(retries={"total_max_attempts": 1, "mode": "standard"})

    def key(self, i: int) -> dict[str, Any]:
        return {"PK": {"S": f"K{i}"}, "SK": {"S": "x"}}

    def get(self, i: int) -> Any:
        return self.client.get_item(TableName=self.table, Key=self.key(i), ConsistentRead=True).get("Item")

    def put(self, i: int, n: int) -> None:
        self.client.put_item(TableName=self.table, Item={**self.key(i), "n": {"N": str(n)}})

    def setup(self) -> None:
        for i in range(3):
            self.put(i, 0)

    def pool_map(self) -> None:
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(self.get, range(3)))
        self.put(0, 1)

    def as_completed(self) -> None:
        from concurrent.futures import as_completed

        with ThreadPoolExecutor(2) as pool:
            for future in as_completed([pool.submit(self.get, i) for i in range(2)]):
                future.result()
        self.put(1, 1)

    def queue(self) -> None:
        import queue

        handoff: queue.Queue[int] = queue.Queue()

        def producer() -> None:
            self.get(0)
            handoff.put(1)

        def consumer() -> None:
            handoff.get()
            self.put(2, 5)

        threads = [threading.Thread(target=producer), threading.Thread(target=consumer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def nested(self) -> None:
        def task() -> None:
            inner = threading.Thread(target=self.get, args=(1,))
            inner.start()
            inner.join()
            self.put(1, 2)

        with ThreadPoolExecutor(1) as pool:
            pool.submit(task).result()

    def one_worker(self) -> None:
        with ThreadPoolExecutor(1) as pool:  # three tasks, one worker: they queue
            for future in [pool.submit(self.get, i) for i in range(3)]:
                future.result()

    def plain(self) -> None:
        self.get(0)
        self.put(0, 9)


@pytest.mark.parametrize(
    ("fan", "tasks"),
    [
        ("pool_map", {"A", "A.1", "A.2", "A.3"}),
        ("as_completed", {"A", "A.1", "A.2"}),
        ("queue", {"A.1", "A.2"}),
        ("nested", {"A.1", "A.1.1"}),
        ("one_worker", {"A.1", "A.2", "A.3"}),
    ],
)
def test_fan_out__map_as_completed_queue_nested_one_worker__explored_the_same_twice(
    tconn: Connection, fan: str, tasks: set[str]
) -> None:
    """Each way of fanning out is explored without a determinism error, and twice alike."""
    fans = Fans(tconn)
    actors = {"A": getattr(fans, fan), "B": fans.plain}
    first, second = (explore(actors, conn=tconn, setup=fans.setup, invariant=lambda res: True) for _ in range(2))
    assert first.passed and second.passed
    assert {t for t, n in first.calls.items() if n} - {"B"} == tasks
    assert (first.runs, first.guarantee) == (second.runs, second.guarantee)

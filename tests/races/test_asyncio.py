"""Actors written with asyncio: blocking boto3 calls sent through ``asyncio.to_thread`` or
``loop.run_in_executor`` are sub-actors like any pool task (asyncio's default executor is a
ThreadPoolExecutor), explored and replayed; the actor's event loop, waiting for them, stands still.

The service is shaped as async team code has it: a transfer reads both balances at once
(``asyncio.gather`` of two ``to_thread`` reads), then writes each through ``run_in_executor``; the
actor is ``asyncio.run(...)`` of it. Its read-modify-write version loses a transfer and is found;
its version-guarded transaction passes; both are explored alike twice (no determinism error).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.races import Exploration, Interleaving, explore, run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.errors import RaceError
from tests.races.bank import Accounts, account

Actor = Callable[[], Any]


class Wallets(Accounts):
    """Two wallets, x and y, 100 each; an async service moves money between them."""

    async def both(self, src: str, dst: str) -> tuple[tuple[int, int], tuple[int, int]]:
        """Both balances at once, each read on asyncio's default executor."""
        a, b = await asyncio.gather(asyncio.to_thread(self.read, src), asyncio.to_thread(self.read, dst))
        return a, b

    async def rmw(self, src: str, dst: str, amount: int) -> str:
        """Read both, then write both through run_in_executor: loses a concurrent transfer's update."""
        (a, va), (b, vb) = await self.both(src, dst)
        loop = asyncio.get_running_loop()
        for name, bal, v in ((src, a - amount, va), (dst, b + amount, vb)):
            item = {**account(name), "bal": {"N": str(bal)}, "v": {"N": str(v)}}
            await loop.run_in_executor(None, functools.partial(self.client.put_item, TableName=self.table, Item=item))
        return "moved"

    async def guarded(self, src: str, dst: str, amount: int) -> str:
        """Read both, then one transaction guarded by both versions; read again when it lost."""

        while True:
            (a, va), (b, vb) = await self.both(src, dst)
            items = [self.guard(src, a - amount, va), self.guard(dst, b + amount, vb)]
            try:
                await asyncio.to_thread(self.client.transact_write_items, TransactItems=items)
                return "moved"
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "TransactionCanceledException":
                    raise

    def actors(self, version: str) -> dict[str, Actor]:
        move = getattr(self, version)
        return {"A": lambda: asyncio.run(move("x", "y", 10)), "B": lambda: asyncio.run(move("y", "x", 5))}

    def conserved(self, res: Interleaving) -> None:
        x, y = self.read("x")[0], self.read("y")[0]
        assert (x, y) == (95, 105), f"x={x}, y={y} after moving 10 x->y and 5 y->x: a transfer was lost"

    def explore(self, version: str) -> Exploration:
        return explore(self.actors(version), conn=self.conn, setup=self.setup, invariant=self.conserved)


@pytest.fixture
def wallets(tconn: Connection) -> Wallets:
    return Wallets(tconn)


def test_asyncio_actor__to_thread_and_run_in_executor__sub_actors_the_lost_transfer_found_and_replayed(
    wallets: Wallets,
) -> None:
    """Each to_thread / run_in_executor call is a sub-actor (A.1, A.2 read; A.3, A.4 write): explore finds the lost
    transfer, and its counterexample replays exactly."""
    result = wallets.explore("rmw")
    assert not result.passed, result.summary()
    assert {t: n for t, n in result.calls.items() if n} == {f"{a}.{i}": 1 for a in "AB" for i in range(1, 5)}
    assert result.counterexample is not None and result.interleaving is not None
    assert set(result.interleaving.history["actor"]) == {f"{a}.{i}" for a in "AB" for i in range(1, 5)}
    for _ in range(3):
        wallets.setup()
        replay = run_interleaving(wallets.actors("rmw"), result.counterexample, conn=wallets.conn)
        assert " ".join(replay.turns) == result.counterexample
        with pytest.raises(AssertionError, match="a transfer was lost"):
            wallets.conserved(replay)


def test_asyncio_actor__version_guarded_transaction__passes_every_order_alike_twice(wallets: Wallets) -> None:
    """The guarded version passes with a true guarantee, and a second exploration runs the same orders."""
    first, second = wallets.explore("guarded"), wallets.explore("guarded")
    assert first.passed, first.summary()
    assert "explored" in first.guarantee
    assert (first.runs, first.guarantee) == (second.runs, second.guarantee)


def test_asyncio_actor__order_naming_its_executor_calls__replayed(wallets: Wallets) -> None:
    """run_interleaving takes an order of the executor calls: A's two reads, B's two reads, then the writes."""
    wallets.setup()
    order = "A.1 A.2 B.1 B.2 A.3 A.4 B.3 B.4"
    res = run_interleaving(wallets.actors("rmw"), order, conn=wallets.conn)
    assert " ".join(res.turns) == order
    assert list(res.history["operation"]) == ["GetItem"] * 4 + ["PutItem"] * 4
    with pytest.raises(AssertionError, match="x=105, y=95"):
        wallets.conserved(res)


def test_asyncio_actor__on_uvloop__refused_at_once_naming_the_loop_and_the_way_that_works(wallets: Wallets) -> None:
    """uvloop's event loop is not asyncio's own: the lab cannot see it wait for its executor, so the first
    ``to_thread`` is a RaceError naming uvloop and asyncio.run, not a run that times out."""
    uvloop = pytest.importorskip("uvloop")

    def on_uvloop(src: str, dst: str, amount: int) -> Actor:
        return lambda: uvloop.run(wallets.rmw(src, dst, amount))

    actors = {"A": on_uvloop("x", "y", 10), "B": on_uvloop("y", "x", 5)}
    with pytest.raises(RaceError) as caught:
        explore(actors, conn=wallets.conn, setup=wallets.setup, invariant=wallets.conserved)
    message = str(caught.value)
    assert "uvloop" in message and "asyncio.run" in message and "to_thread" in message, message
    assert "timed out" not in message

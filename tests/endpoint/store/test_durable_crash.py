"""Nothing acknowledged is lost, no transaction is half there: ``labkit serve --data DIR`` (a real
subprocess) takes conditional increments and two-item transactions from 4 threads, is killed with
SIGKILL at a random moment (after a random number of acknowledged writes: a count, never a time, so the
moment does not move with the machine's speed), and restarted on the same directory — five rounds in a row."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.endpoint.clients import raw_client
from tests.endpoint.tables import make_table

pytestmark = pytest.mark.slow

THREADS = 4
ROUNDS = 5
TABLE = "crash-counters"
HUNG_SECONDS = 600.0


def _serve(data: Path) -> tuple[subprocess.Popen[str], str]:
    """``labkit serve --port 0 --data DIR`` started for real; its URL, read from what it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "labkit.commands.cli", "serve", "--port", "0", "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "listening on " in line:
            return process, line.split("listening on ")[1].split()[0]
    raise AssertionError(f"labkit serve did not start: {process.stderr.read() if process.stderr else ''}")


def _key(kind: str, i: int) -> dict[str, Any]:
    return {"PK": {"S": f"{kind}-{i}"}}


def _value(client: Any, kind: str, i: int) -> int:
    return int(client.get_item(TableName=TABLE, Key=_key(kind, i), ConsistentRead=True)["Item"]["n"]["N"])


class Acks:
    """Acknowledged writes counted as they come, and workers that left; the test blocks on it until a count."""

    def __init__(self, workers: int) -> None:
        self.count, self.running = 0, workers
        self.changed = threading.Condition()

    def one(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def left(self) -> None:
        with self.changed:
            self.running -= 1
            self.changed.notify_all()

    def wait_for(self, target: int) -> bool:
        """Until ``target`` acknowledged writes (True), or every worker left first (False): woken by each write."""
        with self.changed:
            # Hundreds of writes take seconds idle and well under a minute at load 10; the bound is for a hung server.
            return self.changed.wait_for(lambda: self.count >= target or not self.running, HUNG_SECONDS) and (
                self.count >= target
            )


class Worker(threading.Thread):
    """One thread's writes: a conditional increment of its counter, then a transaction that increments its two
    transaction counters together, alternately, until the server dies. Counts what was acknowledged and what
    was in flight when it died."""

    def __init__(self, url: str, i: int, start: dict[str, int], acked: Acks) -> None:
        super().__init__(daemon=True)
        self.client = raw_client(url)
        self.i = i
        self.counter, self.pair = start["c"], start["t"]
        self.acked_counter = self.acked_pair = 0
        self.in_flight: str | None = None
        self.acks = acked

    def run(self) -> None:
        try:
            self._write()
        finally:
            self.acks.left()

    def _write(self) -> None:
        one = {":one": {"N": "1"}}
        while True:
            try:
                self.in_flight = "c"
                self.client.update_item(
                    TableName=TABLE,
                    Key=_key("c", self.i),
                    UpdateExpression="SET n = n + :one",
                    ConditionExpression="n = :now",
                    ExpressionAttributeValues={**one, ":now": {"N": str(self.counter)}},
                )
                self.counter += 1
                self.acked_counter += 1
                self.acks.one()
                self.in_flight = "t"
                now = {":now": {"N": str(self.pair)}}
                self.client.transact_write_items(
                    TransactItems=[
                        {
                            "Update": {
                                "TableName": TABLE,
                                "Key": _key(kind, self.i),
                                "UpdateExpression": "SET n = n + :one",
                                "ConditionExpression": "n = :now",
                                "ExpressionAttributeValues": {**one, **now},
                            }
                        }
                        for kind in ("ta", "tb")
                    ]
                )
                self.pair += 1
                self.acked_pair += 1
                self.acks.one()
            except Exception:  # the server was killed: what was in flight may or may not be there
                return


def test_kill_9_under_load__every_acknowledged_write_is_there_and_no_transaction_is_half_there(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    process, url = _serve(tmp_path)
    client = raw_client(url)
    make_table(client, range_key=False, name=TABLE)
    for i in range(THREADS):
        for kind in ("c", "ta", "tb"):
            client.put_item(TableName=TABLE, Item={**_key(kind, i), "n": {"N": "0"}})
    start = {i: {"c": 0, "t": 0} for i in range(THREADS)}
    total = 0
    try:
        for round_ in range(ROUNDS):
            acked = Acks(THREADS)
            workers = [Worker(url, i, start[i], acked) for i in range(THREADS)]
            for worker in workers:
                worker.start()
            target = rng.randrange(50, 1500)  # the random moment: after this many acknowledged writes
            assert acked.wait_for(target), f"the writes stopped after {acked.count} of {target} (seed {seed})"
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=HUNG_SECONDS)  # SIGKILL cannot be refused: returns at once
            for worker in workers:
                worker.join(timeout=HUNG_SECONDS)  # each leaves at its next refused connection (no retries)
                assert not worker.is_alive()
            process, url = _serve(tmp_path)
            client = raw_client(url)
            for worker in workers:
                i, why = worker.i, f"seed {seed}, round {round_ + 1}, thread {worker.i}"
                counter, ta, tb = (_value(client, kind, i) for kind in ("c", "ta", "tb"))
                assert ta == tb, f"a transaction is half there ({why}): ta={ta} tb={tb}"
                least = start[i]["c"] + worker.acked_counter
                assert least <= counter <= least + (worker.in_flight == "c"), (why, counter, least)
                least = start[i]["t"] + worker.acked_pair
                assert least <= ta <= least + (worker.in_flight == "t"), (why, ta, least)
                start[i] = {"c": counter, "t": ta}
                total += worker.acked_counter + worker.acked_pair
        assert total > ROUNDS * THREADS  # the load ran: acknowledged writes in every round
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=HUNG_SECONDS)  # SIGTERM ends serve at once; the bound is for a hung one

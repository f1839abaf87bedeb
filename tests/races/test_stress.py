"""Stress and sweep: many workers at once, anomalies vs concurrency."""

from __future__ import annotations

from typing import Any, cast

import pandas as pd
import pytest
from botocore.exceptions import ClientError

from labkit.races import (
    STRESS_COLUMNS,
    stress,
    sweep,
)
from labkit.races.stress import _progress_enabled
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError
from tests.races.increments import KEY, StressOp, conditional_increment, put_counter, read_counter, safe_increment


def test_stress__16_threads_x_50_conditional_increments__final_value_equals_successes(
    tconn: Connection,
) -> None:
    """Conditional increments never lose an update: the counter ends at the number of successes."""
    put_counter(tconn)
    table = tconn.table_name
    seen: dict[int, int] = {}  # each worker's last known value (one call per op)

    def op(client: Any, worker: int, seq: int) -> int:
        n = seen.get(worker, 0)
        try:
            client.update_item(
                TableName=table,
                Key=KEY,
                UpdateExpression="SET n = :new",
                ConditionExpression="n = :old",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ExpressionAttributeValues={":new": {"N": str(n + 1)}, ":old": {"N": str(n)}},
            )
        except ClientError as exc:
            seen[worker] = int(cast(Any, exc.response)["Item"]["n"]["N"])
            raise
        seen[worker] = n + 1
        return n + 1

    df = stress(op, conn=tconn, threads=16, ops=50)
    assert tuple(df.columns) == STRESS_COLUMNS
    assert len(df) == 800
    assert sorted(set(zip(df["worker"], df["seq"], strict=True))) == [(w, s) for w in range(16) for s in range(50)]
    assert set(df.loc[~df["ok"], "error_code"]) <= {"ConditionalCheckFailedException"}
    assert (df["calls"] == 1).all() and df["ok"].any()
    assert read_counter(tconn) == int(df["ok"].sum())


def test_stress__op_raises_non_dynamodb_error__raises_it(tconn: Connection) -> None:
    """A bug in the op stops the run and surfaces; it is not counted as a failed operation."""

    def op(client: Any, worker: int, seq: int) -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError, match="bug"):
        stress(op, conn=tconn, threads=4, ops=3)


def test_stress__retries_column__counts_failed_calls_the_op_recovered_from(
    tconn: Connection,
) -> None:
    """An op that retries after ConditionalCheckFailed shows those retries in `retries`."""
    put_counter(tconn)
    table = tconn.table_name
    actor = safe_increment(table)

    df = stress(lambda client, w, s: actor(client), conn=tconn, threads=4, ops=5)
    assert df["ok"].all()
    assert int(df["retries"].sum()) == int(((df["calls"] - 2) // 2).sum())
    assert read_counter(tconn) == 20


def test_stress__processes__spawned_workers_reach_the_same_table(tconn: Connection) -> None:
    """processes=True runs each worker in its own spawned process against the same endpoint."""
    put_counter(tconn)
    df = stress(StressOp(tconn.table_name), conn=tconn, threads=2, ops=3, processes=True)
    assert len(df) == 6
    assert read_counter(tconn) == int(df["ok"].sum())


def test_stress__processes_with_lambda__raises_validation_error(conn: Connection) -> None:
    """A lambda cannot be sent to a spawned process; the error says to use a module function."""
    with pytest.raises(ValidationError, match="picklable op"):
        stress(lambda c, w, s: None, conn=conn, threads=2, ops=1, processes=True)


@pytest.mark.parametrize(("threads", "ops"), [(0, 1), (1, 0), (True, 1), (2.0, 1)])
def test_stress__bad_counts__raise_validation_error(conn: Connection, threads: Any, ops: Any) -> None:
    """threads and ops must be ints >= 1."""
    with pytest.raises(ValidationError, match=r"must be an int >= 1, not"):
        stress(lambda c, w, s: None, conn=conn, threads=threads, ops=ops)


def test_progress__ci_or_pytest__is_quiet_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress bar is off under CI and pytest; progress=True/False always wins."""
    monkeypatch.setenv("CI", "true")
    assert _progress_enabled(None, 10_000) is False
    assert _progress_enabled(True, 10) is True
    monkeypatch.delenv("CI")
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    assert _progress_enabled(None, 10) is False  # short runs never show a bar
    assert _progress_enabled(False, 10_000) is False


def test_sweep__thread_counts__one_row_each_with_measure_columns(tconn: Connection) -> None:
    """sweep stresses once per thread count and adds measure()'s columns."""
    table = tconn.table_name

    def op(client: Any, worker: int, seq: int) -> int:
        return conditional_increment(client, table)

    def measure(df: pd.DataFrame) -> dict[str, int]:
        return {"anomalies": int(df["ok"].sum()) - read_counter(tconn)}

    out = sweep(op, tconn, [1, 2, 4], ops=5, setup=lambda: put_counter(tconn), measure=measure)
    assert list(out["threads"]) == [1, 2, 4]
    assert list(out["ops"]) == [5, 10, 20]
    assert list(out["anomalies"]) == [0, 0, 0]
    assert {"ok", "failed", "elapsed", "throughput"} <= set(out.columns)

"""A race's history (one row per call) and the checks that read it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ..shared.catalogue import READS, WRITES
from ..shared.errors import ValidationError
from ..shared.validation import check_columns, check_int

#: Columns of a history DataFrame, in order.
HISTORY_COLUMNS = ("actor", "seq", "turn", "operation", "key", "start", "end", "outcome", "retries", "injected")


def history_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The history DataFrame of a run's call records: :data:`HISTORY_COLUMNS`, sorted by start."""
    df = pd.DataFrame([{c: r.get(c) for c in HISTORY_COLUMNS} for r in rows], columns=list(HISTORY_COLUMNS))
    df["turn"] = df["turn"].astype("Int64")
    df["retries"] = df["retries"].astype("int64")
    df["seq"] = df["seq"].astype("int64")
    return df.sort_values(["start", "actor", "seq"], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- counters


def lost_updates(successes: int, final: int, initial: int = 0) -> int:
    """Increments that reported success but are missing from the counter: successes - (final - initial)."""
    check_int("successes", successes, least=0)
    check_int("final", final)
    check_int("initial", initial)
    lost = successes - (final - initial)
    if lost < 0:
        raise ValidationError(
            f"the counter moved by {final - initial} but only {successes} increments reported "
            "success; count every increment that reached DynamoDB (a timed-out call may still "
            "have been applied), or check `initial`"
        )
    return lost


# ---------------------------------------------------------------- histories


def overwrites(history: pd.DataFrame) -> pd.DataFrame:
    """Lost-update shapes in a race history: a read, another actor's write, then the reader's write.

    For every successful write by actor X to key K, take X's last successful read of K before
    it; if another actor's successful write to K happened wholly between that read and X's
    write, X wrote from an outdated read and overwrote it. Keys are compared as the history
    records them (the item's key values, by its table's key schema), so a Query read is only
    matched to a write of the same string; calls that overlap in time are never counted.
    Columns: key, actor, read_seq, write_seq, other_actor, other_seq.
    """
    needed = ("actor", "seq", "operation", "key", "start", "end", "outcome")
    check_columns("overwrites", history.columns, needed, hint="pass res.history")
    calls = [c for c in history.to_dict("records") if c["outcome"] == "ok"]
    reads = [c for c in calls if c["operation"] in READS]
    writes = [c for c in calls if c["operation"] in WRITES]
    found = []
    for w in writes:
        mine = [r for r in reads if r["actor"] == w["actor"] and r["key"] == w["key"] and r["end"] <= w["start"]]
        if not mine:
            continue
        read = max(mine, key=lambda r: r["end"])
        for o in writes:
            if (
                o["actor"] != w["actor"]
                and o["key"] == w["key"]
                and o["start"] >= read["end"]
                and o["end"] <= w["start"]
            ):
                found.append(
                    {
                        "key": w["key"],
                        "actor": w["actor"],
                        "read_seq": int(read["seq"]),
                        "write_seq": int(w["seq"]),
                        "other_actor": o["actor"],
                        "other_seq": int(o["seq"]),
                    }
                )
    columns = ["key", "actor", "read_seq", "write_seq", "other_actor", "other_seq"]
    return pd.DataFrame(found, columns=columns)


__all__ = ["HISTORY_COLUMNS", "history_frame", "lost_updates", "overwrites"]

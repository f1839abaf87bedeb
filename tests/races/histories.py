"""History frames built by hand (:data:`labkit.races.HISTORY_COLUMNS`), for the tests that read a history."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from labkit.races import HISTORY_COLUMNS

#: A history row: actor, seq, turn (None: after the forced order), operation, start, end, outcome.
Row = tuple[str, int, int | None, str, float, float, str]


def history_of(rows: Iterable[Row]) -> pd.DataFrame:
    """A history frame (:data:`HISTORY_COLUMNS`) of ``rows``, all on key "K", none retried."""
    return pd.DataFrame(
        [
            {
                "actor": a,
                "seq": s,
                "turn": t,
                "operation": op,
                "key": "K",
                "start": t0,
                "end": t1,
                "outcome": out,
                "retries": 0,
            }
            for a, s, t, op, t0, t1, out in rows
        ],
        columns=list(HISTORY_COLUMNS),
    )


def history(*calls: tuple[str, int, str, str, float, float]) -> pd.DataFrame:
    """A history frame of ``calls`` (actor, seq, operation, outcome, start, end), none in a turn."""
    return history_of((a, s, None, op, t0, t1, out) for a, s, op, out, t0, t1 in calls)

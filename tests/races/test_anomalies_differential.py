"""The anomalies against the truth, on generated read-modify-write programs (issue 39).

For each program (tests/races/rmw_programs.py: 2-3 actors adding to 1-2 items in the styles teams
write, correct and not), every serial order of the actors is run directly for the states a correct
execution can end in; then explore runs it, and every explored run is checked two ways:

* no miss: a run whose final state matches no serial order reports an anomaly
  (:func:`labkit.races.anomalies.find`, what explore reads with no invariant);
* no invention: every anomaly reported names calls that interleaved as its definition says, checked
  here from the history's own columns (actor, turn, operation, key, outcome, found), not from the
  module's code.

Hypothesis, derandomized: 20 programs in the fast loop, and 10 on a client with botocore's retries
explored with a lost answer at each call point (its resend of an ``ADD`` or a computed ``SET`` must be
named applied twice; a resent Put or ``SET`` of a value is harmless); 60 more under ``@pytest.mark.slow``
(1,500 in the nightly deep checks).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings

from labkit.races import Anomaly, Interleaving, explore
from labkit.races.anomalies import APPLIED_TWICE, CHECK_THEN_WRITE, LOST_UPDATE, find
from labkit.races.identity import KeySchemas
from labkit.shared.backend import Connection
from tests.helpers import derandomized
from tests.races.rmw_programs import RESENT_STYLES, Lab, Program, rmw_programs

FAST = derandomized("LABKIT_ANOMALY_PROGRAMS", 20)
#: 60 in the slow checks (`.ci/run` keeps its 20 minutes); the workflow's nightly deep checks run 1,500.
SLOW = settings(FAST, max_examples=int(os.environ.get("LABKIT_ANOMALY_PROGRAMS_SLOW", 60)))
#: Programs' orders (with no refusals): small enough to explore whole in the fast loop.
FAST_ORDERS, SLOW_ORDERS = 30, 90
#: What the checks saw, over the module: runs, runs off every serial state, anomalies checked.
SEEN = {"programs": 0, "runs": 0, "non_serial": 0, "anomalies": 0}
KINDS: Counter[str] = Counter()
WRITES = ("PutItem", "UpdateItem")


@pytest.fixture(scope="module")
def lab(conn: Connection) -> Iterator[Lab]:
    made = Lab(conn)
    yield made
    made.drop()


@pytest.fixture(scope="module")
def retrying_lab(conn: Connection) -> Iterator[Lab]:
    made = Lab(conn, retrying=True)
    yield made
    made.drop()


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    print(
        f"\nanomalies differential: {SEEN['programs']} programs, {SEEN['runs']} explored runs, "
        f"{SEEN['non_serial']} off every serial state (0 missed), {SEEN['anomalies']} anomalies checked "
        f"({', '.join(f'{k}: {n}' for k, n in sorted(KINDS.items()))})"
    )


def as_defined(anomaly: Anomaly, records: Sequence[Mapping[str, Any]]) -> str | None:
    """Why ``anomaly`` does not match its definition in this history (None: it does)."""
    by_name = {f"{r['actor']}{int(r['seq']) + 1}": r for r in records}
    if any(name not in by_name for name in anomaly.calls):
        return f"names calls the run did not make: {anomaly.calls}"
    calls = [by_name[name] for name in anomaly.calls]
    if anomaly.kind == APPLIED_TWICE:
        (call,) = calls  # botocore's resend, within the call
        expression = str(call["params"].get("UpdateExpression") or "")
        if not str(call["injected"] or "").startswith("lose-response") or call["retries"] < 1:
            return "no lost answer resent"
        accumulates = "ADD" in expression or "+" in expression
        if call["outcome"] != "ok" or call["operation"] != "UpdateItem" or not accumulates:
            return "not an applied ADD or computed SET"
        return None
    if len(calls) != 3:
        return f"{anomaly.kind} names {len(calls)} calls, not a read, the other write and the write"
    read, other, write = calls
    turns = [c["turn"] for c in calls]
    if None in turns or turns != sorted(turns) or len(set(turns)) != 3:
        return f"the calls are not in turn order: {turns}"
    if read["actor"] != write["actor"] or other["actor"] == read["actor"]:
        return "the read and the write are not one actor's, or the other write is that actor's"
    if read["operation"] != "GetItem" or other["operation"] not in WRITES or write["operation"] not in WRITES:
        return f"operations {[c['operation'] for c in calls]}"
    if not read["key"] == other["key"] == write["key"]:
        return f"keys {[c['key'] for c in calls]}"
    if other["outcome"] != "ok" or write["outcome"] != "ok":
        return "a write named was not applied"
    if anomaly.kind == LOST_UPDATE:
        reread = [
            r
            for r in records
            if r["actor"] == read["actor"]
            and r["operation"] == "GetItem"
            and r["key"] == read["key"]
            and other["turn"] < r["turn"] < write["turn"]
        ]
        if reread:
            return "the writer read the item again after the other write"
        if read["found"] is False and write["operation"] == "PutItem":
            return "a Put after a read that found nothing is check-then-write's"
    elif anomaly.kind == CHECK_THEN_WRITE:
        if read["found"] is not False or write["operation"] != "PutItem":
            return "the read found the item, or the write is not a Put"
    else:
        return f"{anomaly.kind}: a read-modify-write program without faults cannot show it"
    return None


def check(lab: Lab, program: Program, faults: Sequence[str] = ()) -> None:
    """Explore ``program``; every run off the serial states names an anomaly; every anomaly is as defined."""
    serial = lab.serial_states(program)
    schemas = KeySchemas(lab.conn)
    runs: list[tuple[Any, list[Anomaly], tuple[dict[str, Any], ...], str]] = []

    def collect(res: Interleaving) -> None:
        runs.append((lab.state(), find(res.records, schemas, failed=set(res.errors)), res.records, res.label))

    result = explore(
        lab.actors(program),
        conn=lab.conn,
        setup=lab.setup(program),
        invariant=collect,
        budget=400 * (1 + 6 * len(faults)),
        faults=list(faults) or None,
    )
    assert result.passed, result.summary()
    SEEN["programs"] += 1
    for state, anomalies, records, order in runs:
        SEEN["runs"] += 1
        if state not in serial:
            SEEN["non_serial"] += 1
            assert anomalies, f"missed: order {order!r} ended in {state}, no serial order does ({serial}); {program}"
        for anomaly in anomalies:
            SEEN["anomalies"] += 1
            KINDS[anomaly.kind] += 1
            wrong = as_defined(anomaly, records)
            assert wrong is None, f"{anomaly.message}: {wrong} (order {order!r}); {program}"


@FAST
@given(program=rmw_programs(max_orders=FAST_ORDERS))
def test_anomalies__random_read_modify_write_programs__every_non_serial_run_named_every_anomaly_real(
    lab: Lab, program: Program
) -> None:
    """20 programs: each run off every serial state names an anomaly; each anomaly's calls interleaved as defined."""
    check(lab, program)


@pytest.mark.slow
@SLOW
@given(program=rmw_programs(max_orders=SLOW_ORDERS))
def test_anomalies__many_random_read_modify_write_programs__no_miss_no_invention(lab: Lab, program: Program) -> None:
    """150 larger programs, the same two checks."""
    check(lab, program)


@settings(FAST, max_examples=max(FAST.max_examples // 2, 1))
@given(program=rmw_programs(max_orders=12, styles=RESENT_STYLES))
def test_anomalies__programs_with_lost_answers_resent_by_botocore__no_miss_no_invention(
    retrying_lab: Lab, program: Program
) -> None:
    """10 programs on a retrying client, a lost answer at each call point: an ADD or computed SET resent is named
    applied twice, a Put or a SET of a value resent is not; every run off the serial states names one."""
    check(retrying_lab, program, ["lose-response"])

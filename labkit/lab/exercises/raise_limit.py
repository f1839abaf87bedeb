"""Exercise "raise-limit": add to the settings item's rate limit so that concurrent calls all count."""

from __future__ import annotations

import re
from typing import Any

from ...shared.catalogue import Op
from ...shared.constants import FLAGS_SK_V1, SETTINGS_PK
from ...shared.errors import RetriesExhausted
from ..invariants import lost_updates
from .outcomes import Broke, Outcome, RecordedCall, Stop, person
from .trial import Trial
from .verdict import Finding

NAME = "raise-limit"
SIGNATURE = "(client, table_name, by: int) -> None"
SAMPLE = (10,)
#: Giving up after a bound is allowed (lesson 01 §7's loop does): a call that raises RetriesExhausted wrote
#: nothing and counts as not done. In the race of two callers one re-read always suffices, so there it fails.
DOCUMENTED: tuple[type[Exception], ...] = (RetriesExhausted,)
KEYS = f"the settings item PK={SETTINGS_PK!r}, SK={FLAGS_SK_V1!r}"
START = 100
BY = {"A": 10, "B": 5}
SEED = [
    {
        "PK": SETTINGS_PK,
        "SK": FLAGS_SK_V1,
        "rate_limit_per_minute": START,
        "version": 1,
        "maintenance_mode": False,
        "banner_message": "hello",
    }
]
CCF = "ConditionalCheckFailedException"

HINTS = (
    "Two people run your function at the same moment. If both read the limit (100) before "
    "either writes, what does each one write back? The checker forces exactly that order.",
    "Make the write conditional on what you read: the item has a `version` number. Write "
    "`ConditionExpression='#v = :read'` (with ExpressionAttributeNames {'#v': 'version'}) and "
    "`SET ..., #v = #v + :one` in the same UpdateItem.",
    "When the condition fails (client.exceptions.ConditionalCheckFailedException) someone else "
    "changed the item first. Don't overwrite: go round a loop — GetItem with ConsistentRead=True, "
    "compute, conditional UpdateItem — a bounded number of times (lesson 01 §7: 5), then raise "
    "labkit.shared.errors.RetriesExhausted having written nothing.",
    "For a pure addition there is a one-call answer too: "
    "UpdateExpression='ADD rate_limit_per_minute :by'. DynamoDB adds to whatever the value is "
    "now, so nothing is lost — but it only works for arithmetic, and it is not idempotent: a lost "
    "answer, resent, adds twice (lesson 03 §4).",
)

ATOMIC_NOTE = (
    "An atomic ADD is a correct answer: DynamoDB applies each addition to the current value, "
    "so no change is lost and no retry is needed. It is not idempotent, though: when its answer is "
    "lost and botocore resends it, it adds twice (lesson 03 §4). It only works for arithmetic; for a change "
    "computed from what you read (double the limit, switch a flag because of another) use the "
    "version guard — ConditionExpression '#v = :read' and a retry (hint level 3)."
)


def allowed(pk: str, sk: str) -> bool:
    return pk == SETTINGS_PK and sk == FLAGS_SK_V1


def _setting(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((i for i in items if i["PK"] == SETTINGS_PK and i["SK"] == FLAGS_SK_V1), None)


def _problem(expected: int, items: list[dict[str, Any]]) -> str | None:
    item = _setting(items)
    if item is None:
        return "the settings item is gone"
    got = item.get("rate_limit_per_minute")
    if got != expected:
        return f"rate_limit_per_minute ended at {got!r}, not {expected}"
    dropped = [k for k in SEED[0] if k not in item]
    if dropped:
        return f"the item lost its {', '.join(dropped)} attribute(s)"
    return None


def _atomic(calls: list[RecordedCall]) -> bool:
    """One UpdateItem that adds in place (ADD, or SET x = x + :v), with no read before it."""
    if len(calls) != 1 or calls[0].operation != Op.UPDATE_ITEM:
        return False
    expr = str(calls[0].params.get("UpdateExpression", ""))
    return bool(re.search(r"\bADD\b", expr, re.I) or re.search(r"=\s*(\S+)\s*\+", expr))


def _write_words(calls: list[RecordedCall]) -> tuple[str, str]:
    """(kind, sentence) for an unguarded write after a read."""
    writes = [c for c in calls if c.is_write]
    if any(c.operation == Op.PUT_ITEM for c in writes):
        return "read-modify-write", "your PutItem wrote back the whole item as it was read"
    return ("read-modify-write", "your UpdateItem SET the limit computed from what was read, with no condition")


def explain(broke: Broke) -> Finding:
    res, outs = broke.res, broke.outcomes
    refused = [
        n
        for n, o in outs.items()
        if any(code == CCF for code in res.history.loc[res.history["actor"] == n, "outcome"])
        and (o.exc is not None or not _retried(res, n))
    ]
    if refused:
        who = person(refused[0])
        exc = outs[refused[0]].exc
        ended = "raised it" if exc is not None else "returned as if it had worked"
        if isinstance(exc, RetriesExhausted):
            ended = "gave up (RetriesExhausted), though with two callers one re-read always suffices"
        return Finding(
            "condition-without-retry",
            f"{who}'s change was refused by your condition ({CCF}) and your function {ended}: a "
            f"condition with no retry — {who}'s +{BY[refused[0]]} never happened ({broke.problem}). "
            "When the version check fails, read the item again and retry until it succeeds.",
            res.label,
            res,
        )
    calls = [c for o in outs.values() for c in o.calls]
    if not any(c.conditional for c in calls if c.is_write):
        kind, words = _write_words(calls)
        final = (_setting(broke.items) or {}).get("rate_limit_per_minute")
        lost = [n for n in BY if final == START + sum(BY.values()) - BY[n]]
        if lost:
            other = person("B" if lost[0] == "A" else "A")
            return Finding(
                kind,
                f"{person(lost[0])}'s change was lost: {words} — {other} read the limit before "
                f"{person(lost[0])}'s write and wrote back a value computed from that stale read "
                f"({broke.problem}). Make the write conditional on the version you read, and retry.",
                res.label,
                res,
            )
        return Finding(kind, f"a change was lost: {words} ({broke.problem})", res.label, res)
    return Finding(
        "wrong-result",
        f"a change was lost although your write is conditional ({broke.problem}): does the write also "
        "change what the condition checks (`#v = #v + :one`)? If not, the second writer's condition "
        "still holds and it overwrites the first",
        res.label,
        res,
    )


def _retried(res: Any, actor: str) -> bool:
    """The actor made another call after its failed conditional write."""
    outcomes = list(res.history.loc[res.history["actor"] == actor, "outcome"])
    return CCF in outcomes and outcomes.index(CCF) < len(outcomes) - 1


def _raised_ccf(outs: dict[str, Outcome]) -> str | None:
    for name, out in outs.items():
        if out.exc is not None and CCF in str(out.exc):
            return name
    return None


GAVE_UP_AFTER_WRITING = "Raise RetriesExhausted only when nothing of the change was written"


def _storm_mistake(calls: list[RecordedCall], problem: str) -> tuple[str, str]:
    """(kind, words) for a storm that broke the limit, from the storm judge's problem."""
    if problem.startswith("a call raised"):
        return "condition-without-retry", ""
    if "additions of 1 were lost" in problem:
        return "read-modify-write", ""
    if GAVE_UP_AFTER_WRITING in problem:
        return "wrote-then-gave-up", ""
    return "wrong-result", ""


def script(trial: Trial) -> None:
    trial.reset(SEED)
    alone = trial.solo("A", 10)
    problem = _problem(START + 10, trial.items())
    if problem:
        raise Stop(Finding("wrong-result", f"run alone with by=10 (limit {START}): {problem}"))
    trial.solo("A", -30)  # lowering is an addition too
    problem = _problem(START + 10 - 30, trial.items())
    if problem:
        raise Stop(Finding("wrong-result", f"run alone with by=-30 after by=10: {problem}"))
    expected = START + sum(BY.values())

    def judge(outs: dict[str, Outcome], items: list[dict[str, Any]]) -> str | None:
        if _raised_ccf(outs):
            return f"{person(_raised_ccf(outs) or '')}'s call raised {CCF}"
        return _problem(expected, items)

    trial.race({n: (by,) for n, by in BY.items()}, SEED, judge, explain)

    def storm_judge(outs: dict[str, Outcome], items: list[dict[str, Any]]) -> str | None:
        if any(
            o.exc is not None and not isinstance(o.exc, RetriesExhausted) and CCF in str(o.exc) for o in outs.values()
        ):
            return f"a call raised {CCF}: a condition with no retry"
        final = (_setting(items) or {}).get("rate_limit_per_minute")
        done = sum(o.ok for o in outs.values())  # each added 1; a call that gave up (RetriesExhausted) added 0
        if isinstance(final, int) and final - START <= done and (lost := lost_updates(done, final, START)):
            return f"{lost} of {done} additions of 1 were lost (the limit ended at {final}, not {START + done})"
        gave_up = sum(isinstance(o.exc, RetriesExhausted) for o in outs.values())
        if isinstance(final, int) and gave_up and final > START + done:
            return (
                f"the limit ended at {final}, not {START + done}: {done} calls returned and {gave_up} raised "
                "RetriesExhausted, yet one that gave up had added its 1. " + GAVE_UP_AFTER_WRITING
            )
        return _problem(START + done, items)

    trial.storm(SEED, lambda worker, seq: (1,), storm_judge, threads=4, ops=3, explain=_storm_mistake)
    if _atomic(alone.calls):
        trial.notes.append(ATOMIC_NOTE)

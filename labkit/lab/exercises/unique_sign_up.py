"""Exercise "unique-sign-up": create an account whose email and username are unique."""

from __future__ import annotations

from typing import Any

from ...shared.errors import TransactionConflict, ValidationError, ValueTaken
from . import accounts as acc
from .outcomes import Broke, Outcome, RecordedCall, Stop, person
from .trial import Trial
from .verdict import Finding

NAME = "unique-sign-up"
SIGNATURE = "(client, table_name, email: str, username: str) -> str"
SAMPLE = ("ada@example.com", "ada")
#: TransactionConflict: resent a few times and still in conflict (nothing written). Only the storm's real
#: concurrency can cause one; in a forced order one request runs at a time, so raising it there is wrong.
DOCUMENTED: tuple[type[Exception], ...] = (ValueTaken, ValidationError, TransactionConflict)
KEYS = acc.KEYS
allowed = acc.allowed

HINTS = (
    "DynamoDB enforces only one kind of uniqueness: the primary key. So each unique value needs "
    "an item whose KEY is that value — a marker: PK=UNIQ#EMAIL#<email>, SK=LOCK "
    "(labkit.patterns.uniqueness.marker_key('EMAIL', email)). Looking for the email first (a Query on "
    "email-index, a Scan) is a read: two sign-ups can both read 'free' and both write.",
    "Write the account and its two markers with ConditionExpression='attribute_not_exists(PK)' "
    "on each Put, so the second writer of the same marker is refused.",
    "Put all three items in ONE client.transact_write_items(TransactItems=[...]): all are written "
    "or none. Three separate PutItems leave an orphan marker when the second one is refused.",
    "Normalise first: labkit.patterns.uniqueness.normalise_email(' Ada@Example.COM ') == 'ada@example.com' "
    "(it also raises ValidationError for rubbish); same for normalise_username. When the "
    "transaction is cancelled, exc.response['CancellationReasons'] has one entry per action: "
    "a 'ConditionalCheckFailed' at the email marker's position means the email is taken -> raise "
    "labkit.shared.errors.ValueTaken({'email': email}).",
)


NOBODY_GOT_IT = (
    "a value nobody holds is not taken — when every sign-up for it was cancelled, the reasons said "
    "TransactionConflict: resend, then raise TransactionConflict, never ValueTaken"
)


def _storm_mistake(calls: list[RecordedCall], problem: str) -> tuple[str, str]:
    """(kind, words) for a storm that broke it: an email nobody got with no conflict raised, else the mistake."""
    if NOBODY_GOT_IT in problem:
        return "conflict-as-taken", ""
    return acc.storm_mistake(calls, problem)


def _conflict_in_forced_order(outs: dict[str, Outcome]) -> str | None:
    raised = [n for n, o in outs.items() if isinstance(o.exc, TransactionConflict)]
    if not raised:
        return None
    return (
        f"{person(raised[0])}'s call raised TransactionConflict in a forced order, where one request runs at "
        "a time and no conflict can happen: raise it only for a cancellation whose reasons say "
        "'TransactionConflict', after resending; a 'ConditionalCheckFailed' at a marker is ValueTaken"
    )


def _explain_invariant(broke: Broke) -> Finding:
    if broke.problem == _conflict_in_forced_order(broke.outcomes):
        return Finding("error", broke.problem, broke.res.label, broke.res)
    _, kind, words = acc.diagnose(broke)
    return Finding(kind, f"{broke.problem}: {words}", broke.res.label, broke.res)


def _race_judge(outs: dict[str, Outcome], items: list[dict[str, Any]]) -> str | None:
    wins = [n for n, o in outs.items() if o.ok]
    lost = acc.broken(items)
    if lost is None and (conflict := _conflict_in_forced_order(outs)):
        return conflict
    if len(acc.accounts(items)) > 1 and len(wins) > 1 and lost is None:
        return "both sign-ups succeeded"
    if lost is not None:
        return " and ".join(person(n) for n in wins) + (" signed up, and " if wins else "") + lost[1]
    if len(wins) > 1:
        return f"both {person('A')} and {person('B')} signed up with the same value"
    if not wins and all(isinstance(o.exc, ValueTaken) for o in outs.values()):
        return "both sign-ups were refused, though one of them should have succeeded"
    if len(acc.accounts(items)) != len(wins):
        return f"{len(wins)} sign-up(s) succeeded but the table holds {len(acc.accounts(items))} account(s)"
    return None


def _race_without_markers(trial: Trial) -> None:
    """No markers at all: show the check-then-write race itself (two accounts, one email)."""

    def judge(outs: dict[str, Outcome], items: list[dict[str, Any]]) -> str | None:
        wins = [n for n, o in outs.items() if o.ok]
        if len(wins) > 1 and len(acc.accounts(items)) > 1:
            return f"both {person('A')} and {person('B')} signed up with 'ada@example.com'"
        return None

    def explain(broke: Broke) -> Finding:
        kind, words = acc.mistake(acc.calls_of(broke.outcomes), "several_owners")
        if kind == "wrong-result":
            kind, words = "no-markers", "nothing reserves the email: write a marker item per value"
        return Finding(kind, f"{broke.problem}: {words}", broke.res.label, broke.res)

    trial.race({"A": ("ada@example.com", "ada"), "B": ("ada@example.com", "bob")}, [], judge, explain)


def _expect_taken(trial: Trial, out: Outcome, what: str, kind: str, words: str) -> None:
    if isinstance(out.exc, ValueTaken):
        lost = acc.broken(trial.items())
        if lost is not None:
            k, w = acc.mistake(out.calls, lost[0])
            raise Stop(Finding(k, f"after {what} was refused, {lost[1]}: {w}"))
        return
    if out.exc is not None:
        raise Stop(Finding(*acc.taken_not_refused(what, out)))
    if kind == "wrong-result":
        kind, words = "taken-not-refused", "a taken value must raise ValueTaken and write nothing"
    items = trial.items()
    raise Stop(
        Finding(
            kind, f"{what} succeeded (returned {out.value!r}); now {len(acc.accounts(items))} accounts exist: {words}"
        )
    )


def script(trial: Trial) -> None:
    trial.reset([])
    out = trial.solo("A", "ada@example.com", "ada")
    items = trial.items()
    mine = acc.accounts(items)
    if not isinstance(out.value, str) or not out.value:
        raise Stop(
            Finding("wrong-result", f"sign_up must return the new account's id (a str); it returned {out.value!r}")
        )
    if len(mine) != 1 or mine[0]["PK"] != f"ACCT#{out.value}":
        raise Stop(
            Finding(
                "wrong-result",
                f"after one sign-up returning {out.value!r} the table "
                f"should hold ACCT#{out.value}/PROFILE; it holds "
                f"{[a['PK'] for a in mine]}",
            )
        )
    if mine[0].get("email") != "ada@example.com" or mine[0].get("username") != "ada":
        raise Stop(
            Finding(
                "wrong-result",
                "the account must store email and username; it holds "
                f"{ {k: v for k, v in mine[0].items() if k not in ('PK', 'SK')} }",
            )
        )
    lost = acc.broken(items)
    if lost is not None and lost[0] == "missing_marker" and not acc.shape(out.calls)["markers"]:
        _race_without_markers(trial)
    if lost is not None:
        raise Stop(
            Finding(
                "no-markers" if not acc.shape(out.calls)["markers"] else "wrong-result",
                f"after one sign-up, {lost[1]}: write a marker item per unique value (hint level 1)",
            )
        )
    # bad input, one call after another
    dup = trial.solo("B", "ada@example.com", "bob")
    s = acc.shape(dup.calls)
    kind, words = acc.mistake(dup.calls, "duplicate")
    if not s["markers"] and kind == "wrong-result":
        kind, words = "no-markers", "nothing stops a second account with the same email"
    _expect_taken(trial, dup, "a second sign-up with 'ada@example.com' (one after the other)", kind, words)
    _expect_taken(
        trial,
        trial.solo("B", "  Ada@Example.COM ", "bob"),
        "a sign-up with '  Ada@Example.COM '",
        "missing-normalisation",
        "a missing normalisation — ' Ada@Example.COM ' and 'ada@example.com' are the same "
        "address; normalise with labkit.patterns.uniqueness.normalise_email before building keys",
    )
    _expect_taken(
        trial,
        trial.solo("B", "bob@example.com", "ADA"),
        "a sign-up with username 'ADA' (Ada has 'ada')",
        "missing-normalisation",
        "a missing normalisation — usernames compare case-insensitively; "
        "use labkit.patterns.uniqueness.normalise_username",
    )
    bad = trial.solo("B", "not-an-email", "bob")
    if not isinstance(bad.exc, ValidationError):
        raise Stop(
            Finding(
                "missing-normalisation",
                "a sign-up with email 'not-an-email' was "
                "accepted: a missing normalisation — labkit.patterns.uniqueness.normalise_email "
                "rejects it with ValidationError before anything is written",
            )
        )
    # races: the same email; the same username
    trial.race({"A": ("ada@example.com", "ada"), "B": ("ada@example.com", "bob")}, [], _race_judge, _explain_invariant)
    trial.race({"A": ("ada@example.com", "ada"), "B": ("bob@example.com", "ada")}, [], _race_judge, _explain_invariant)

    def storm_judge(outs: dict[str, Outcome], items: list[dict[str, Any]]) -> str | None:
        wins = sum(o.ok for o in outs.values())
        lost = acc.broken(items)
        if lost is not None:
            return lost[1]
        if wins != len(acc.accounts(items)):
            return f"{wins} sign-ups succeeded and {len(acc.accounts(items))} accounts exist"
        for email in sorted({o.args[0] for o in outs.values()}):  # 4 workers want each email at once
            mine = [o for o in outs.values() if o.args[0] == email]
            won = sum(o.ok for o in mine)
            if won > 1:
                return f"{won} sign-ups succeeded for {email}; expected 1"
            if won == 0 and not any(isinstance(o.exc, TransactionConflict) for o in mine):
                raised = sorted({type(o.exc).__name__ for o in mine})
                return f"nobody got {email}, and its callers raised {', '.join(raised)}: {NOBODY_GOT_IT}"
        return None

    trial.storm(
        [],
        lambda w, s: (f"user{s}@example.com", f"user{s}-{w}"),
        storm_judge,
        threads=4,
        ops=3,
        explain=_storm_mistake,
    )

"""Exercise "change-email": move an account to a new email, atomically and uniquely."""

from __future__ import annotations

from typing import Any

from ...patterns.uniqueness import marker_key
from ...shared.errors import ConflictError, NotFound, ValidationError, ValueTaken
from . import accounts as acc
from .outcomes import Broke, Outcome, Stop, person
from .trial import Trial
from .verdict import Finding

NAME = "change-email"
SIGNATURE = "(client, table_name, account_id: str, new_email: str) -> None"
SAMPLE = ("ada", "ada@new.example.com")
#: ConflictError (RetriesExhausted, TransactionConflict, StaleAccount): a bounded retry gave up, nothing
#: written. Only the storm's real concurrency justifies one; in a forced order one re-read always suffices.
DOCUMENTED: tuple[type[Exception], ...] = (ValueTaken, ValidationError, ConflictError, NotFound)
SAME_EMAIL = (
    "the new email normalises to the one the account holds, so there is nothing to change: return None "
    "without writing (a transaction whose Put and Delete name one marker is refused)"
)
UNKNOWN_ACCOUNT = "an account that does not exist raises labkit.shared.errors.NotFound and writes nothing"
KEYS = acc.KEYS
allowed = acc.allowed
SEED = [*acc.account("ada", "ada@example.com", "ada"), *acc.account("bob", "bob@example.com", "bob")]

HINTS = (
    "A change of email is three writes: the account's email, a new marker "
    "(UNIQ#EMAIL#<new>/LOCK) and the removal of the old marker. If they are separate calls, "
    "something can happen between them — and the checker will make it happen.",
    "Put the three in ONE client.transact_write_items: Update the account, Put the new marker with "
    "ConditionExpression='attribute_not_exists(PK)', Delete the old marker. All or nothing.",
    "Read the account first (GetItem, ConsistentRead=True) to learn the old email, and guard the "
    "account Update with ConditionExpression='email = :old': if someone changed it meanwhile, the "
    "transaction is cancelled and you read again and retry. Guard the Delete with '#o = :me' "
    "(ExpressionAttributeNames {'#o': 'owner'}).",
    "Normalise the new email with labkit.patterns.uniqueness.normalise_email. A cancelled transaction's "
    "exc.response['CancellationReasons'][1]['Code'] == 'ConditionalCheckFailed' means the new "
    "email is taken: raise labkit.shared.errors.ValueTaken({'email': new_email}).",
)


def _items_of(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{i['PK']}/{i['SK']}": i for i in items}


def _old_marker_kept(items: list[dict[str, Any]], email: str) -> bool:
    pk = marker_key("EMAIL", email)["PK"]
    return any(i["PK"] == pk for i in items)


def _gave_up(outs: dict[str, Outcome], two_tabs: bool) -> str | None:
    """A forced order where a call gave up (a ConflictError), or, in the two tabs, called a free email taken."""
    for name, out in outs.items():
        if isinstance(out.exc, ConflictError) or (two_tabs and isinstance(out.exc, ValueTaken)):
            return (
                f"{person(name)}'s change to {out.args[1]!r} raised {type(out.exc).__name__} in a forced order, "
                "where one re-read is always enough: when the account changed since your read (the "
                "`email = :old` condition failed, slot 0), read it again and retry"
            )
    return None


def _explain(broke: Broke) -> Finding:
    if broke.problem in (_gave_up(broke.outcomes, True), _gave_up(broke.outcomes, False)):
        return Finding("condition-without-retry", broke.problem, broke.res.label, broke.res)
    invariant, kind, words = acc.diagnose(broke)
    calls = acc.calls_of(broke.outcomes)
    if (
        kind == "wrong-result"
        and invariant == "orphan_marker"
        and not any(action == "Delete" for c in calls for action, _ in c.actions())
    ):
        kind, words = (
            "old-marker-kept",
            (
                "an old marker never deleted: the old email stays "
                "reserved for ever; delete the old marker in the same "
                "transaction"
            ),
        )
    return Finding(kind, f"{broke.problem}: {words}", broke.res.label, broke.res)


def _judge(expect_one_winner: bool, two_tabs: bool = False) -> Any:
    def judge(outs: dict[str, Outcome], items: list[dict[str, Any]]) -> str | None:
        wins = [n for n, o in outs.items() if o.ok]
        lost = acc.broken(items)
        if lost is not None:
            return lost[1]
        gave_up = _gave_up(outs, two_tabs)
        if gave_up:
            return gave_up
        if expect_one_winner and len(wins) != 1:
            if len(wins) == 2:
                return f"both {person('A')} and {person('B')} moved to the same email"
            return "both changes were refused, though one should have succeeded"
        if len(acc.accounts(items)) != 2:
            return f"the table holds {len(acc.accounts(items))} accounts, not 2"
        return None

    return judge


def _solo_named(trial: Trial, kind: str, words: str, *args: Any) -> Outcome:
    """``trial.solo(*args)``; a crash in it is the mistake ``kind``, told with ``words``."""
    try:
        return trial.solo(*args)
    except Stop as stop:
        if stop.finding.kind != "error":
            raise
        raise Stop(Finding(kind, f"{stop.finding.message}; {words}")) from None


def script(trial: Trial) -> None:
    trial.reset(SEED)
    out = trial.solo("A", "ada", "ada@new.example.com")
    items = trial.items()
    ada = _items_of(items).get("ACCT#ada/PROFILE", {})
    if ada.get("email") != "ada@new.example.com":
        raise Stop(
            Finding(
                "wrong-result",
                f"after change_email('ada', 'ada@new.example.com') Ada's account holds email {ada.get('email')!r}",
            )
        )
    lost = acc.broken(items)
    if lost is not None:
        if lost[0] == "orphan_marker" and _old_marker_kept(items, "ada@example.com"):
            raise Stop(
                Finding(
                    "old-marker-kept",
                    "an old marker never deleted: after Ada moved to "
                    "ada@new.example.com, UNIQ#EMAIL#ada@example.com still says she owns "
                    "it, so nobody can ever take ada@example.com. Delete the old marker "
                    "in the same transaction",
                )
            )
        k, w = acc.mistake(out.calls, lost[0])
        raise Stop(Finding(k if k != "wrong-result" else "no-markers", f"after one change, {lost[1]}: {w}"))
    freed = trial.solo("B", "bob", "ada@example.com")
    if freed.exc is not None:
        raise Stop(
            Finding(
                "old-marker-kept",
                "Ada moved away from ada@example.com, yet Bob could "
                f"not take it ({type(freed.exc).__name__}): an old marker never deleted",
            )
        )
    dup = trial.solo("B", "bob", "ada@new.example.com")
    what = "Bob's move to 'ada@new.example.com' while Ada holds it"
    if dup.exc is not None and not isinstance(dup.exc, ValueTaken):
        raise Stop(Finding(*acc.taken_not_refused(what, dup)))
    if not isinstance(dup.exc, ValueTaken):
        kind, words = acc.mistake(dup.calls, "duplicate")
        if kind == "wrong-result":
            kind, words = "taken-not-refused", "a taken email must raise ValueTaken and change nothing"
        raise Stop(
            Finding(
                kind, f"Bob could move to 'ada@new.example.com' while Ada holds it (one call after the other): {words}"
            )
        )
    taken = trial.solo("B", "bob", "  ADA@New.Example.com ")
    if not isinstance(taken.exc, ValueTaken):
        raise Stop(
            Finding(
                "missing-normalisation",
                "Bob could move to '  ADA@New.Example.com ' "
                "while Ada holds 'ada@new.example.com': a missing normalisation — "
                "normalise with labkit.patterns.uniqueness.normalise_email before building keys",
            )
        )
    # bad input: a taken email and rubbish change nothing
    trial.reset(SEED)
    for args, error in ((("ada", "bob@example.com"), ValueTaken), (("ada", "not-an-email"), ValidationError)):
        before = _items_of(trial.items())
        out = trial.solo("A", *args)
        after = _items_of(trial.items())
        if not isinstance(out.exc, error):
            kind = "missing-normalisation" if error is ValidationError else acc.mistake(out.calls, "duplicate")[0]
            kind = "taken-not-refused" if kind == "wrong-result" else kind
            raise Stop(
                Finding(
                    kind,
                    f"change_email{args!r} should raise {error.__name__} and change "
                    f"nothing; it {'returned' if out.exc is None else 'raised ' + type(out.exc).__name__}",
                )
            )
        if before != after:
            changed = sorted(set(before) ^ set(after) | {k for k in before if before[k] != after.get(k)})
            kind = "separate-calls" if acc.shape(out.calls)["separate"] else "wrong-result"
            raise Stop(
                Finding(
                    kind,
                    f"change_email{args!r} raised {error.__name__} but changed "
                    f"{', '.join(changed)}: nothing may change when it fails"
                    + ("; markers written in separate calls" if kind == "separate-calls" else ""),
                )
            )
    # races: two accounts want the same new email; Ada changes her email in two tabs at once (both
    # succeed, one after the other: the later re-reads and retries; never half); one takes the email the
    # other gives up
    trial.race({"A": ("ada", "new@example.com"), "B": ("bob", "new@example.com")}, SEED, _judge(True), _explain)
    trial.race({"A": ("ada", "x1@example.com"), "B": ("ada", "x2@example.com")}, SEED, _judge(False, True), _explain)
    trial.race({"A": ("ada", "ada2@example.com"), "B": ("bob", "ada@example.com")}, SEED, _judge(False), _explain)

    def storm_judge(outs: dict[str, Outcome], items: list[dict[str, Any]]) -> str | None:
        lost = acc.broken(items)
        return lost[1] if lost else None

    trial.storm(
        SEED,
        lambda w, s: (("ada", "bob")[w % 2], f"e{s}-{w}@example.com"),
        storm_judge,
        threads=4,
        ops=3,
        explain=acc.storm_mistake,
    )
    # a new email that normalises to the one the account holds: nothing to change, so no write at all
    trial.reset(SEED)
    before = _items_of(trial.items())
    same = _solo_named(trial, "same-email", SAME_EMAIL, "A", "ada", "  ADA@Example.com ")
    writes = [c.operation for c in same.calls if c.is_write]
    if same.exc is not None or writes or _items_of(trial.items()) != before:
        did = f"raised {type(same.exc).__name__}" if same.exc is not None else f"sent {', '.join(writes) or 'no write'}"
        raise Stop(
            Finding(
                "same-email",
                f"change_email('ada', '  ADA@Example.com ') while Ada holds 'ada@example.com' {did}; {SAME_EMAIL}",
            )
        )
    # an account that does not exist: NotFound, nothing written
    ghost = _solo_named(trial, "unknown-account", UNKNOWN_ACCOUNT, "A", "nobody", "nobody@example.com")
    if not isinstance(ghost.exc, NotFound) or _items_of(trial.items()) != before:
        did = f"raised {type(ghost.exc).__name__}" if ghost.exc is not None else "returned"
        raise Stop(
            Finding(
                "unknown-account",
                f"change_email('nobody', 'nobody@example.com') {did}"
                + (" and changed the table" if _items_of(trial.items()) != before else "")
                + f": {UNKNOWN_ACCOUNT}",
            )
        )

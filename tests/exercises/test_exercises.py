"""labkit.lab.exercises: the checker fails each classic wrong answer with its own explanation,
passes the reference solutions every time, and gives a clear verdict for broken solutions.

The wrong solutions are in tests/exercises/wrong_answers.py, written the way learners write them.
"""

# the wrong answers are written as learners write them
# mypy: disable-error-code="no-untyped-def,no-untyped-call"

# ruff: noqa: ANN001, ANN201, ARG001, E501

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

import labkit.lab.exercises as ex
from labkit.lab.exercises.solutions import REFERENCE, SETTINGS_KEY
from labkit.lab.exercises.trial import SPIN_CALLS
from labkit.patterns.singleton import FlagStore
from labkit.shared.backend import Connection
from labkit.shared.errors import RetriesExhausted, ValidationError
from recipes import guarded_update
from tests.exercises.wrong_answers import (
    CATALOGUE,
    always_taken,
    ce_check_then_write_gsi,
    ce_guarded_separate_calls,
    crashes,
    deletes_table,
    hangs,
    other_table,
    own_client,
    retries_without_reading,
    rl_atomic_add,
    rl_read_modify_write,
    rl_version_never_bumped,
    stub_change_email,
    su_redundant_gsi_check,
    writes_outside,
    wrong_signature,
)


@pytest.mark.parametrize(("name", "solution", "kind", "words"), CATALOGUE, ids=[c[1].__name__ for c in CATALOGUE])
def test_check__classic_wrong_answer__fails_naming_that_mistake(conn: Connection, name, solution, kind, words) -> None:
    """Each classic wrong answer fails, and the verdict names that mistake in plain words."""
    verdict = ex.check(name, solution, conn=conn)
    assert not verdict.passed
    assert verdict.kinds == (kind,), str(verdict)
    assert words in verdict.findings[0].message
    assert kind in str(verdict)


def test_check__read_modify_write__names_the_forced_order_whose_change_was_lost(conn: Connection) -> None:
    """The lost update comes with its replayable order, who lost what, and a timeline figure."""
    verdict = ex.check("raise-limit", rl_read_modify_write, conn=conn)
    finding = verdict.findings[0]
    assert finding.order == "A B A B"
    assert finding.message.startswith("Ada's change was lost: your PutItem wrote back the whole item as it was read")
    assert "ended at 105, not 115" in finding.message
    assert "order A B A B" in str(verdict)
    fig = finding.figure()
    assert fig is not None and fig.axes[0].get_title(loc="left") == "order A B A B"
    assert '<img alt="timeline of order A B A B" src="data:image/png;base64,' in verdict._repr_html_()
    assert "`A B A B`" in verdict._repr_markdown_()


def test_check__race_found_by_forcing__replays_with_run_interleaving(conn: Connection) -> None:
    """A verdict's order string replays the same race with labkit.races.run_interleaving."""
    verdict = ex.check("change-email", ce_check_then_write_gsi, conn=conn)
    res = verdict.findings[0].interleaving
    assert res is not None and res.label == verdict.findings[0].order
    assert "two accounts hold email 'new@example.com'" in verdict.findings[0].message


def test_check__separate_calls_that_pass_alone__fail_in_the_race_with_its_order(conn: Connection) -> None:
    """Separate guarded calls survive every sequential probe; two tabs changing one email break them."""
    verdict = ex.check("change-email", ce_guarded_separate_calls, conn=conn)
    assert verdict.kinds == ("separate-calls",), str(verdict)
    finding = verdict.findings[0]
    assert finding.order is not None and finding.interleaving is not None
    assert "is an orphan (account ACCT#ada holds" in finding.message


def test_check__redundant_gsi_check_before_a_conditional_transaction__passes(conn: Connection) -> None:
    """A GSI query is only a mistake when it is the only guard: no false alarm when markers hold."""
    verdict = ex.check("unique-sign-up", su_redundant_gsi_check, conn=conn)
    assert verdict.passed, str(verdict)


def test_check__condition_on_a_version_never_bumped__says_what_the_condition_misses(conn: Connection) -> None:
    """A guard on a version the write never changes still loses the update; the verdict says why."""
    verdict = ex.check("raise-limit", rl_version_never_bumped, conn=conn)
    assert verdict.kinds == ("wrong-result",)
    assert "does the write also change what the condition checks" in verdict.findings[0].message
    assert verdict.findings[0].order == "A B A B"


def test_check__atomic_add__passes_and_points_at_the_version_guard(conn: Connection) -> None:
    """An atomic ADD is a correct answer; the verdict says so and names the version guard."""
    verdict = ex.check("raise-limit", rl_atomic_add, conn=conn)
    assert verdict.passed, str(verdict)
    assert verdict.notes and verdict.notes[0].startswith("An atomic ADD is a correct answer")
    assert "version guard" in verdict.notes[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REFERENCE))
def test_check__reference_solution__passes_20_runs_in_a_row(conn: Connection, name: str) -> None:
    """The reference solution passes every time: 20 checks in a row, no flake."""
    for run in range(20):
        verdict = ex.check(name, REFERENCE[name], conn=conn)
        assert verdict.passed, f"run {run + 1}: {verdict}"
        assert verdict.findings == () and verdict.notes == ()


def test_check__reference_solution__tries_every_order_of_two_actors(conn: Connection) -> None:
    """raise-limit's reference makes 2 calls per actor alone: all 6 orders are forced."""
    verdict = ex.check("raise-limit", REFERENCE["raise-limit"], conn=conn)
    assert "6 forced orders in 1 race" in verdict.tried
    assert "12 calls in a storm" in verdict.tried


# ---------------------------------------------------------------- bad solutions


def test_check__wrong_signature__fails_without_running_and_shows_both_signatures(conn: Connection) -> None:
    """A solution with the wrong parameters gets a clear verdict naming the expected signature."""
    verdict = ex.check("raise-limit", wrong_signature, conn=conn)
    assert verdict.kinds == ("wrong-signature",)
    assert verdict.findings[0].message.startswith(
        "the checker calls solution(client, table_name, by: int) -> None, but yours is wrong_signature(client, by)"
    )


#: Broken solutions and the verdict each gets: (exercise, solution, kind, words in its one finding).
BROKEN = [
    # Passing something that cannot be called is a wrong-signature verdict, not a crash.
    pytest.param(
        "unique-sign-up", "def sign_up(): ...", "wrong-signature", "is a str, not a function", id="not-a-function"
    ),
    # A write to a key the exercise does not own fails, naming the key and the allowed ones.
    pytest.param(
        "raise-limit",
        writes_outside,
        "outside-keys",
        "wrote PK='HACK', SK='X', outside this exercise's keys",
        id="writes-outside-its-keys",
    ),
    # A write to a table other than the one given fails before it can do harm elsewhere.
    pytest.param(
        "unique-sign-up", other_table, "outside-keys", "wrote to table 'labkit-lab'", id="writes-another-table"
    ),
    # A solution that ignores the client it is given cannot be raced: the verdict says why.
    pytest.param(
        "raise-limit",
        own_client,
        "wrong-client",
        "made no DynamoDB call with the client it was given",
        id="uses-another-client",
    ),
    # Any error but the exercise's documented one fails with the traceback's last line.
    pytest.param(
        "raise-limit", crashes, "error", "raised ZeroDivisionError: division by zero", id="undocumented-error"
    ),
]


@pytest.mark.parametrize(("name", "solution", "kind", "words"), BROKEN)
def test_check__broken_solution__one_finding_of_its_kind_naming_the_cause(
    conn: Connection, name, solution, kind, words
) -> None:
    """A broken solution gets a clear verdict, not a crash: one finding of its kind, saying what it did."""
    verdict = ex.check(name, solution, conn=conn)
    assert verdict.kinds == (kind,)
    assert words in verdict.findings[0].message


def test_check__never_returns__times_out_naming_the_timeout_and_stops_the_thread(conn: Connection) -> None:
    """A solution that never returns ends in a timeout verdict, and its thread is stopped."""
    verdict = ex.check("raise-limit", hangs, conn=conn, timeout=0.5)
    assert verdict.kinds == ("timeout",)
    assert "did not finish within the 0.5 s timeout" in verdict.findings[0].message
    for thread in [t for t in threading.enumerate() if t.name.startswith("labkit-actor")]:
        thread.join(30)  # stopped by an exception injected at its next bytecode: a hang here is the bug
    assert not [t.name for t in threading.enumerate() if t.name.startswith("labkit-actor")]


def test_check__hangs_only_under_contention__endless_retry_in_the_race_by_its_calls(conn: Connection) -> None:
    """A retry loop that never re-reads spins once it loses a race: judged by its calls without
    progress (SPIN_CALLS in a row, no write by anyone succeeding), whatever the machine's speed."""
    verdict = ex.check("raise-limit", retries_without_reading, conn=conn)
    assert verdict.kinds == ("endless-retry",)
    message = verdict.findings[0].message
    assert f"made {SPIN_CALLS} DynamoDB calls in a row" in message
    assert f"({SPIN_CALLS} of them writes refused by their condition)" in message
    assert "while no write by anyone succeeded, in the race between Ada and Bob" in message


def test_check__deletes_the_table__says_so_and_the_next_check_starts_clean(conn: Connection) -> None:
    """DeleteTable is named in the verdict; the next check gets a fresh table and passes."""
    verdict = ex.check("raise-limit", deletes_table, conn=conn)
    assert verdict.kinds == ("deleted-table",)
    assert "DeleteTable deleted the table" in verdict.findings[0].message
    assert ex.check("raise-limit", REFERENCE["raise-limit"], conn=conn).passed
    assert not [t for t in conn.client.list_tables()["TableNames"] if t.startswith("labkit-ex-")]


def test_check__stub__reads_not_solved_yet(conn: Connection) -> None:
    """The notebook's stub (raise NotImplementedError) is 'not solved yet', not a crash."""
    verdict = ex.check("change-email", stub_change_email, conn=conn)
    assert not verdict.passed and verdict.not_solved
    assert str(verdict).startswith("change-email: not solved yet")


def test_check__documented_error_where_none_is_due__fails_with_its_last_line(conn: Connection) -> None:
    """Raising ValueTaken for a free email is an error verdict quoting the exception."""
    verdict = ex.check("unique-sign-up", always_taken, conn=conn)
    assert not verdict.passed
    assert verdict.kinds == ("wrong-result",)


def test_check__unknown_exercise__raises_validation_error_listing_names(conn: Connection) -> None:
    """An unknown exercise name is a clear error naming the real ones."""
    with pytest.raises(ValidationError, match="no exercise called 'raise'; choose one of 'raise-limit'"):
        ex.check("raise", rl_atomic_add, conn=conn)


def test_check__bad_timeout__raises_validation_error(conn: Connection) -> None:
    """A timeout that is not a positive number is refused before anything runs."""
    with pytest.raises(ValidationError, match="timeout must be a positive number"):
        ex.check("raise-limit", rl_atomic_add, conn=conn, timeout=0)


# ---------------------------------------------------------------- names and hints


def test_names__lists_the_three_exercises_in_workshop_order() -> None:
    """names() gives the exercises in the order a workshop takes them."""
    assert ex.names() == ["raise-limit", "unique-sign-up", "change-email"]


def test_hint__levels__each_gives_more_and_points_to_the_next() -> None:
    """Hints come in levels; each but the last says how to get the next."""
    first = ex.hint("raise-limit", 1)
    assert first.startswith("hint 1/4: ")
    assert "hint('raise-limit', 2)" in first
    assert "more:" not in ex.hint("raise-limit", 4)
    assert "ADD" in ex.hint("raise-limit", 4)


@pytest.mark.parametrize("level", [0, 5, "1", True])
def test_hint__level_out_of_range__raises_validation_error(level: Any) -> None:
    """A hint level that does not exist is a clear error with the range."""
    with pytest.raises(ValidationError, match="'raise-limit' has hints 1 to 4"):
        ex.hint("raise-limit", level)


def test_readme__exercise_example__prints_the_lines_it_shows(
    conn: Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's exercise example, run with a read-modify-write answer, prints its commented lines."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index("## Exercises for workshops") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    code = block.group(1).replace('check("raise-limit", raise_limit)', 'check("raise-limit", raise_limit, conn=conn)')
    exec(compile(code, "README.md", "exec"), {"raise_limit": rl_read_modify_write, "conn": conn})  # noqa: S102
    shown = [line.removeprefix("# ").rstrip(".") for line in block.group(1).splitlines() if line.startswith("# ")]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == shown[0]
    assert printed[1].startswith(shown[1].removesuffix(" .."))


def test_finding__replay__reproduces_the_lost_update_on_a_seeded_table(conn: Connection, tconn: Connection) -> None:
    """The verdict's replay line, run on a table holding the starting item, loses the same change."""
    import labkit
    from labkit.lab.exercises.raise_limit import SEED
    from labkit.lab.invariants import scan_rows

    finding = ex.check("raise-limit", rl_read_modify_write, conn=conn).findings[0]
    assert finding.replay is not None
    for item in SEED:
        tconn.client.put_item(TableName=tconn.table_name, Item={k: _typed(v) for k, v in item.items()})
    res = eval(
        finding.replay,
        {"labkit": labkit, "solution": rl_read_modify_write, "table_name": tconn.table_name, "conn": tconn},
    )  # noqa: S307
    assert res.label == "A B A B"
    assert scan_rows(tconn.client, tconn.table_name)[0]["rate_limit_per_minute"] == 105


def _typed(value: Any) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeSerializer

    return dict(TypeSerializer().serialize(value))


# ---------------------------------------------------------------- issue 40: the exercises agree with the lessons


def lesson_01_store_loop(client, table_name: str, by: int) -> None:
    """Lesson 01 §7's bounded loop as the lesson shows it: store.update (read, version guard, jittered
    retries, at most 5 writes, then RetriesExhausted)."""
    store = FlagStore(client, table_name)
    store.update(lambda flags: {"rate_limit_per_minute": int(flags["rate_limit_per_minute"]) + by})


def lesson_01_recipe_loop(client, table_name: str, by: int) -> None:
    """The same loop in plain boto3 (lesson 01 Optional G, recipes/guarded_update.py), giving up as the
    exercise asks: labkit's RetriesExhausted."""

    def add(item: dict[str, Any]) -> dict[str, Any]:
        return {"rate_limit_per_minute": {"N": str(int(item["rate_limit_per_minute"]["N"]) + by)}}

    try:
        guarded_update.update(client, table_name, SETTINGS_KEY, add, op_id=str(uuid.uuid4()), base_delay=0.001)
    except guarded_update.RetriesExhausted as exc:
        raise RetriesExhausted(str(exc), 5) from exc


@pytest.mark.parametrize("solution", [lesson_01_store_loop, lesson_01_recipe_loop], ids=["store", "recipe"])
def test_check__lesson_01_bounded_loop__passes_raise_limit(conn: Connection, solution) -> None:
    """Issue 40, point 1: the loop lesson 01 §7 teaches (bounded, ends in RetriesExhausted) passes exercise 1."""
    verdict = ex.check("raise-limit", solution, conn=conn)
    assert verdict.passed, verdict


def test_check__bounded_loop_giving_up_in_the_race__condition_without_retry(conn: Connection) -> None:
    """A bound of one attempt gives up in A B A B, where one re-read always suffices: condition-without-retry,
    and the verdict says it gave up."""

    def one_attempt(client, table_name: str, by: int) -> None:
        FlagStore(client, table_name, max_attempts=1).update(
            lambda flags: {"rate_limit_per_minute": int(flags["rate_limit_per_minute"]) + by}
        )

    verdict = ex.check("raise-limit", one_attempt, conn=conn)
    assert not verdict.passed and verdict.findings[0].kind == "condition-without-retry", verdict
    assert "gave up (RetriesExhausted)" in verdict.findings[0].message, verdict.findings[0].message

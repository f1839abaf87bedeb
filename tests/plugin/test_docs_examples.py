"""docs/ci.md's example race tests, from an empty folder with no AWS variables, as a team runs them.

The six example modules are copied as they stand into one EMPTY folder and run with ONE plain
``python -m pytest`` (:func:`~tests.plugin.teams.run_team`: every AWS_*, LABKIT_* and PYTEST_*
variable removed, HOME empty, ``CI=true``), the plugin loaded through its installed entry point; the
modules share no state, and each test below asserts only its own modules' outcomes.

- The races (cart: a module-level boto3 resource; wallet: PynamoDB with no host; sign-up: faults),
  their xfail marks off: the read-modify-write and new-token versions fail with a replayable order
  (and fault); the ADD, versioned and pinned-token versions pass.
- The weak answers (issue 26): a default GetItem read back fails with ``stale-read``, a raw
  ``batch_write_item`` loop with ``unprocessed-items``, a Query that counts one page with
  ``short-page``; ``ConsistentRead=True``, ``ReturnValues``, boto3's ``batch_writer`` and the
  paginator pass.
- As written (the xfail marks on), all of them pass: in the slow checks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.plugin.teams import Session, doc_block, run_team

RACES = ("test_cart_races.py", "test_wallet_races.py", "test_sign_up_retries.py")
WEAK_ANSWERS = ("test_order_read_back.py", "test_import_batch.py", "test_count_orders.py")


def docs_folder(tmp_path: Path) -> Path:
    """An empty folder holding only docs/ci.md's six example test modules, under tests/ as the doc says."""
    folder = tmp_path / "team"
    (folder / "tests").mkdir(parents=True)
    for name in (*RACES, *WEAK_ANSWERS):
        (folder / "tests" / name).write_text(doc_block(f"# tests/{name}"))
    return folder


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The examples with ``--runxfail``: the broken versions must fail."""
    return run_team(docs_folder(tmp_path_factory.mktemp("docs")), "-q", "--runxfail")


def outcomes(session: Session, modules: tuple[str, ...]) -> dict[str, str]:
    return {test: o for m in modules for test, o in session.of(f"tests.{m.removesuffix('.py')}").items()}


def test_empty_folder_no_aws_variables__resource_and_pynamodb_races_found_and_fixes_pass(found: Session) -> None:
    """The read-modify-write cart and wallet and the new-token sign-up fail with a replayable order (and
    fault); the ADD, versioned and pinned-token versions pass."""
    assert outcomes(found, RACES) == {
        "test_two_tabs_add_to_one_cart__both_adds_land[add_to_cart_read_modify_write]": "failed",
        "test_two_tabs_add_to_one_cart__both_adds_land[add_to_cart]": "passed",
        "test_two_deposits_at_once__both_land[Wallet-deposit]": "failed",
        "test_two_deposits_at_once__both_land[VersionedWallet-deposit_versioned]": "passed",
        "test_sign_ups_with_lost_answers__everyone_is_created[False]": "failed",
        "test_sign_ups_with_lost_answers__everyone_is_created[True]": "passed",
    }, found.log
    out = found.log
    assert re.search(r"FAILED after \d+ run\(s\) \(exhaustive\): the cart holds [12] items, expected 3", out)
    assert re.search(r"FAILED after \d+ run\(s\) \(exhaustive\): balance (10|20), expected 30", out)
    for name in (
        "test_two_deposits_at_once__both_land[Wallet-deposit]",
        "test_two_tabs_add_to_one_cart__both_adds_land[add_to_cart_read_modify_write]",
    ):
        section = found.failures[name]
        assert re.search(r"replay: run_interleaving\(actors, '[AB] [AB] [AB] [AB]', conn=conn\)", section), section
    assert re.search(
        r"FAILED after 3 run\(s\) \(exhaustive\) in 'A A B' with A1: lose-response: sign-ups answered "
        r"\[\('A', 'email taken'\), \('B', 'created'\)\]",
        out,
    )
    assert re.search(r"replay: run_interleaving\(actors, 'A A B', conn=conn, faults=\['A1: lose-response'\]\)", out)


def test_empty_folder_no_aws_variables__weak_answers_found_with_their_kind__fixes_pass(found: Session) -> None:
    """Without the xfail marks: each broken version fails in a scenario naming its fault and replays;
    ConsistentRead, ReturnValues, batch_writer and the paginator pass."""
    weak = outcomes(found, WEAK_ANSWERS)
    assert sorted(t for t, o in weak.items() if o == "failed") == [
        "test_confirm__answers_the_confirmed_order[confirm_read_back]",
        "test_count__every_order_counted[count_one_page]",
        "test_import__every_row_lands[import_raw]",
    ], found.log
    assert sorted(o for o in weak.values()) == ["failed"] * 3 + ["passed"] * 4, weak
    read_back = found.failures["test_confirm__answers_the_confirmed_order[confirm_read_back]"]
    assert re.search(
        r"FAILED after \d+ run\(s\) \(exhaustive\) in 'A A' with A2: stale-read: the answer shows the order "
        r"\{'order_id': 'o-1', 'status': 'new'\}",
        read_back,
    ), read_back
    assert "replay: run_interleaving(actors, 'A A', conn=conn, faults=['A2: stale-read'])" in read_back
    batch = found.failures["test_import__every_row_lands[import_raw]"]
    assert re.search(r"in 'A' with A1: unprocessed-items: 2 of 3 rows imported", batch), batch
    page = found.failures["test_count__every_order_counted[count_one_page]"]
    assert re.search(r"in 'A' with A1: short-page: counted 1 of 3 orders", page), page


@pytest.mark.slow
def test_empty_folder__docs_examples_as_written__pass_with_the_broken_ones_as_xfail(tmp_path: Path) -> None:
    """Copied as they stand in docs/ci.md (xfail marks on the broken versions), the examples pass."""
    as_written = run_team(docs_folder(tmp_path), "-q", "-rx")
    assert "7 passed, 6 xfailed" in as_written.log, as_written.log
    assert sorted(as_written.outcomes.values()) == ["passed"] * 7 + ["skipped"] * 6


#: A team's conftest.py that leaves every explore call's invariant out: the history's anomalies decide.
NO_INVARIANT_CONFTEST = """
import labkit.races

_explore = labkit.races.explore


def explore_without_invariant(actors, **options):
    options.pop("invariant", None)
    return _explore(actors, **options)


labkit.races.explore = explore_without_invariant  # before the test modules import it
"""


@pytest.fixture(scope="module")
def without_invariants(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The examples with ``--runxfail`` and every invariant left out."""
    folder = docs_folder(tmp_path_factory.mktemp("anomalies"))
    (folder / "conftest.py").write_text(NO_INVARIANT_CONFTEST)
    return run_team(folder, "-q", "--runxfail")


def test_docs_examples__no_invariants__fixed_versions_pass_broken_ones_named_by_their_anomaly(
    without_invariants: Session,
) -> None:
    """With no invariant: every fixed example passes (no false alarm); the read-modify-write cart and wallet fail
    as a lost update, the raw batch as dropped batch items, the one-page count as a page taken as the whole."""
    found = without_invariants
    every = outcomes(found, (*RACES, *WEAK_ANSWERS))
    fixed = [
        "test_two_tabs_add_to_one_cart__both_adds_land[add_to_cart]",
        "test_two_deposits_at_once__both_land[VersionedWallet-deposit_versioned]",
        "test_sign_ups_with_lost_answers__everyone_is_created[True]",
        "test_confirm__answers_the_confirmed_order[confirm_consistent]",
        "test_confirm__answers_the_confirmed_order[confirm_return_values]",
        "test_import__every_row_lands[import_batch_writer]",
        "test_count__every_order_counted[count_paginated]",
    ]
    assert {t: every.get(t) for t in fixed} == dict.fromkeys(fixed, "passed"), found.log
    named = {
        "test_two_tabs_add_to_one_cart__both_adds_land[add_to_cart_read_modify_write]": "lost update: ",
        "test_two_deposits_at_once__both_land[Wallet-deposit]": "lost update: ",
        "test_import__every_row_lands[import_raw]": "A1: unprocessed-items: dropped batch items: A1 BatchWriteItem",
        "test_count__every_order_counted[count_one_page]": "with A1: short-page: page taken as the whole: A1 Query",
    }
    for test, anomaly in named.items():
        assert every.get(test) == "failed" and anomaly in found.failures[test], (test, found.log)

"""docs/ci.md's three weak-answer race tests, from an empty folder with no AWS variables (issue 26).

Copied as they stand into an empty folder and run with a plain ``python -m pytest`` as a clean CI
runner would (:func:`~tests.plugin.conftest.run_pytest_in`): with ``--runxfail`` the broken
versions fail with the fault named (a default GetItem read back: ``stale-read``; a raw
``batch_write_item`` loop: ``unprocessed-items``; a Query that counts one page: ``short-page``) and
the fixed ones pass (``ConsistentRead=True``, ``ReturnValues``, boto3's ``batch_writer``, the
paginator); as written (their ``xfail`` marks on) they all pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.plugin.conftest import run_pytest_in
from tests.plugin.test_plugin_routing import doc_block, failure_sections

MODULES = ("test_order_read_back.py", "test_import_batch.py", "test_count_orders.py")


def weak_folder(tmp_path: Path) -> Path:
    """An empty folder holding only docs/ci.md's three weak-answer test modules."""
    folder = tmp_path / "team"
    (folder / "tests").mkdir(parents=True)
    for name in MODULES:
        (folder / "tests" / name).write_text(doc_block(f"# tests/{name}"))
    return folder


def test_empty_folder_no_aws_variables__weak_answers_found_with_their_kind__fixes_pass(tmp_path: Path) -> None:
    """Without the xfail marks: each broken version fails in a scenario naming its fault and replays;
    ConsistentRead, ReturnValues, batch_writer and the paginator pass."""
    found = run_pytest_in(weak_folder(tmp_path), "-q", "--runxfail")
    out = found.stdout
    assert found.returncode == 1, out + found.stderr
    assert "3 failed, 4 passed" in out, out
    failures = failure_sections(out)
    assert sorted(failures) == [
        "test_confirm__answers_the_confirmed_order[confirm_read_back]",
        "test_count__every_order_counted[count_one_page]",
        "test_import__every_row_lands[import_raw]",
    ]
    read_back = failures["test_confirm__answers_the_confirmed_order[confirm_read_back]"]
    assert re.search(
        r"FAILED after \d+ run\(s\) \(exhaustive\) in 'A A' with A2: stale-read: the answer shows the order "
        r"\{'order_id': 'o-1', 'status': 'new'\}",
        read_back,
    ), read_back
    assert "replay: run_interleaving(actors, 'A A', conn=conn, faults=['A2: stale-read'])" in read_back
    batch = failures["test_import__every_row_lands[import_raw]"]
    assert re.search(r"in 'A' with A1: unprocessed-items: 2 of 3 rows imported", batch), batch
    page = failures["test_count__every_order_counted[count_one_page]"]
    assert re.search(r"in 'A' with A1: short-page: counted 1 of 3 orders", page), page


@pytest.mark.slow
def test_empty_folder__weak_answer_examples_as_written__pass_with_the_broken_as_xfail(tmp_path: Path) -> None:
    """Copied as they stand in docs/ci.md (xfail marks on the broken versions), the examples pass."""
    as_written = run_pytest_in(weak_folder(tmp_path), "-q", "-rx")
    assert as_written.returncode == 0, as_written.stdout + as_written.stderr
    assert "4 passed, 3 xfailed" in as_written.stdout

"""The README stays true: its race-lab example runs and shows what the text says it shows."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _block_after(heading: str) -> str:
    text = README.read_text()
    section = text[text.index(heading) :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


def test_readme__race_lab_example__loses_the_update_in_4_of_6_orders() -> None:
    """The README's race-lab example runs as written, and n ends at 1 in exactly 4 of 6 orders."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_block_after("## The race lab"), "README.md", "exec"), {})  # noqa: S102
    orders = re.findall(r"^\d\s+([AB](?: [AB]){3})\s+(\d)$", out.getvalue(), re.M)
    assert len(orders) == 6
    assert sum(n == "1" for _, n in orders) == 4


def test_readme__two_commands__are_the_ones_bootstrap_and_ci_run() -> None:
    """The first screen's two commands exist in bootstrap.py, and .ci/run runs the test one."""
    text = README.read_text()
    first_screen = text[: text.index("---")]
    assert "python3 bootstrap.py lab" in first_screen and "python3 bootstrap.py test" in first_screen
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python3 bootstrap.py test\n" in ci and "python3 bootstrap.py test --slow\n" in ci
    import bootstrap  # the repository root is on sys.path under pytest (rootdir conftest)

    assert shlex.join(["python", *bootstrap.TEST_COMMAND]) in text
    assert shlex.join(["python", *bootstrap.SLOW_TEST_COMMAND]) in text

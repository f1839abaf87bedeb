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


def test_readme__a_newcomers_page__under_12_kb_reference_in_docs() -> None:
    """The README stays a five-minute read (under 12 KB): what labkit is, the two commands, what you see,
    where to go next; its reference pages exist in docs/ and it links each of them."""
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) < 12 * 1024, f"README.md is {len(text.encode())} bytes"
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "What you see" and headings[-1] == "Where to go next", headings
    for page in ("reference", "install", "testing", "troubleshooting", "ci", "workshop", "notebooks"):
        assert f"](docs/{page}.md)" in text, page
        assert (README.parent / "docs" / f"{page}.md").is_file(), page


def test_docs__relative_links__resolve_from_the_page_that_has_them() -> None:
    """Every relative Markdown link in README.md and docs/*.md names a file or folder that exists, read
    from the linking page's own folder (docs/ links as `install.md`, the README as `docs/install.md`)."""
    pages = [README, *sorted((README.parent / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            path = target.split("#", 1)[0]
            if not path or re.match(r"[a-z]+:", path):
                continue  # an anchor on the same page, or a URL
            if not (page.parent / path).exists():
                broken.append(f"{page.name}: {target}")
    assert broken == []

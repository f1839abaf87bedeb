"""The docs stay true: every repository path a doc names exists, and no doc points outside the repository.

A path is a backquoted or linked name that starts with one of the repository's top-level folders or
files (``labkit/...``, ``tests/...``, ``docs/...``, ``bootstrap.py``, ...), outside fenced code blocks
(those show a team's files, e.g. ``# tests/test_points_races.py``). A glob (``tests/*.py``) must match
something; a path with a placeholder (``<name>``, ``NAME``) is a pattern, not a path, and is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("lessons/**/*.md")])
TOP = tuple(sorted(p.name for p in ROOT.iterdir() if not p.name.startswith(".") or p.name in (".ci", ".github")))
_CANDIDATE = re.compile(r"`([^`\s]+)`|\]\(([^)\s#]+)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def named_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) for every repository path named outside fenced code blocks."""
    found: list[tuple[int, str]] = []
    fenced = False
    for n, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _CANDIDATE.finditer(line):
            raw = (match.group(1) or match.group(2) or "").strip().rstrip(".,:;)")
            path = raw.split("::", 1)[0].split(":", 1)[0] if raw.count(":") and not raw.startswith("http") else raw
            if path.startswith(("http://", "https://", "mailto:")) or "/" not in path and path not in TOP:
                continue
            if path.split("/", 1)[0] not in TOP or re.search(r"<[^>]+>|\b[A-Z]{3,}\b|\{|NN", path):
                continue
            found.append((n, path))
    return found


def exists(path: str) -> bool:
    if any(ch in path for ch in "*?["):
        return any(ROOT.glob(path))
    return (ROOT / path.rstrip("/")).exists()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs__every_named_path_exists(doc: Path) -> None:
    """A doc that names labkit/endpoint/apply.py after the file moved fails here, naming the line."""
    missing = [f"{doc.relative_to(ROOT)}:{n}: {path}" for n, path in named_paths(doc.read_text()) if not exists(path)]
    assert missing == []


def test_docs__nothing_cites_a_file_outside_the_repository() -> None:
    """No doc, test or module points at a style guide (or anything) that only lives outside the repository."""
    outside = re.compile(r"STYLE\.md|\.\./shared|/work/")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in [*DOCS, *ROOT.glob("tests/**/*.py"), *ROOT.glob("labkit/**/*.py"), *ROOT.glob("tools/*.py")]
        if path != Path(__file__)
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if outside.search(line)
    ]
    assert offenders == []


def test_named_paths__finds_backquoted_and_linked_paths_but_not_code_blocks() -> None:
    """The scanner sees `labkit/x.py` and [x](docs/y.md), skips fenced blocks, URLs and placeholders."""
    text = "see `labkit/x.py` and [y](docs/y.md)\n```\n# tests/test_team.py\n```\n`https://a/b` `lessons/<name>.md`\n"
    assert named_paths(text) == [(1, "labkit/x.py"), (1, "docs/y.md")]


def test_license__mit_as_pyproject_says__beside_the_readme() -> None:
    """LICENSE holds the MIT text pyproject.toml's `license = "MIT"` names (teams copy recipes/ from here)."""
    import tomllib

    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"] == "MIT"
    assert text.startswith("MIT License\n\nCopyright (c) 2026 labkit contributors\n")
    assert "Permission is hereby granted, free of charge, to any person obtaining a copy" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text

"""The lessons and what each says about itself: the ``labkit:`` block of its source's front matter.

Every lesson source ``lessons/NN_topic.md`` (MyST markdown) opens with a YAML header; its ``labkit``
key holds the lesson's metadata, the one place the tests, the tools and docs/workshop.md read it from::

    labkit:
      order: 1                 # its place in the course
      title: the settings item, the lost update and the version guard
      minutes: 45              # the core path's stated time (the first screen says the same)
      optional_minutes: 35     # the Optional sections' stated time
      local_skips:             # the cells that print "skipped on DynamoDB Local: <why>", by their why
        - its throttling comes from labkit's partition model

Exercises (``lessons/exercises/``) are not lessons here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "lessons"
NOTEBOOKS = ROOT / "notebooks"
KEYS = {"order", "title", "minutes", "optional_minutes", "local_skips"}


@dataclass(frozen=True)
class Lesson:
    name: str
    order: int
    title: str
    minutes: int
    optional_minutes: int
    local_skips: tuple[str, ...]

    @property
    def source(self) -> Path:
        return SOURCES / f"{self.name}.md"

    @property
    def notebook(self) -> Path:
        return NOTEBOOKS / f"{self.name}.ipynb"


def front_matter(path: Path) -> dict[str, object]:
    """The YAML header of a MyST source (between the first two ``---`` lines)."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ValueError(f"{path}: no front matter (a YAML header between --- lines)")
    header = text[4 : text.index("\n---\n", 4)]
    data = yaml.safe_load(header)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the front matter is not a YAML mapping")
    return data


def read(path: Path) -> Lesson:
    """The lesson at ``path``, its metadata checked: every key present, of its type."""
    meta = front_matter(path).get("labkit")
    if not isinstance(meta, dict) or set(meta) != KEYS:
        raise ValueError(f"{path}: front matter needs a 'labkit:' block with exactly {sorted(KEYS)}")
    skips = meta["local_skips"] or []
    ints = [meta[k] for k in ("order", "minutes", "optional_minutes")]
    if not all(isinstance(v, int) and v > 0 for v in ints) or not isinstance(skips, list):
        raise ValueError(f"{path}: order and minutes must be positive whole numbers, local_skips a list")
    return Lesson(path.stem, meta["order"], str(meta["title"]), meta["minutes"], meta["optional_minutes"], tuple(skips))


def lessons() -> list[Lesson]:
    """Every lesson, in course order."""
    found = sorted((read(p) for p in SOURCES.glob("[0-9][0-9]_*.md")), key=lambda lesson: lesson.order)
    orders = [lesson.order for lesson in found]
    if orders != list(range(1, len(found) + 1)):
        raise ValueError(f"lesson orders must be 1..{len(found)}, each once: {orders}")
    return found

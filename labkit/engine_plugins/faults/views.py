"""How the race lab names one view of a weak answer: ``B3: stale-read (index misses A1)``.

The engine names a view by item keys (``stale-read; index-misses={"PK":...}@2``, docs/reference.md);
the race lab names it by the *writes of the run* the read does not see, each by the call that made
it — ``A1``, or ``A1[1]`` for the second action of a call that wrote several items (a
TransactWriteItems, a BatchWriteItem) — so one name means one view in every order where it can
happen (:mod:`labkit.races.views` turns it into the engine's form as the read goes out):

* ``behind N`` — what the read reads, as of before its N latest writes (a table, LSI or partition
  read: a replica applies its partition's writes in order); plain ``stale-read`` is the first view,
  newest first, that answers otherwise (``behind 1`` when that one differs);
* ``misses A1, B2`` — a BatchGetItem's keys read on their own: each named item as of before that write
  (and its later ones);
* ``index misses A1`` — a global secondary index read: each named base item's index entry as of
  before that write (and its later ones), every other entry current;
* ``torn-read (misses A1[0])`` — those items' writes of the TransactWriteItems ``A1`` not yet seen,
  its other writes seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...shared.errors import ValidationError

BEHIND, MISSES, INDEX_MISSES = "behind", "misses", "index misses"
_WRITE = re.compile(r"^(?P<actor>[^\s:#,\[\]()]+?)#?(?P<n>\d+)(?:\[(?P<action>\d+)\])?$")


@dataclass(frozen=True, order=True)
class Write:
    """One write of the run, by the call that made it: ``A1`` (its item), ``A1[1]`` (its action 1's item)."""

    actor: str
    n: int
    action: int | None = None

    def text(self) -> str:
        point = f"{self.actor}#{self.n}" if self.actor[-1:].isdigit() else f"{self.actor}{self.n}"
        return point if self.action is None else f"{point}[{self.action}]"


@dataclass(frozen=True)
class View:
    """One view of a weak answer, named by the run's writes it does not see (see the module docstring)."""

    kind: str
    behind: int = 0
    writes: tuple[Write, ...] = ()

    def text(self) -> str:
        if self.kind == BEHIND:
            return f"{BEHIND} {self.behind}"
        return f"{self.kind} {', '.join(w.text() for w in self.writes)}"


def parse_view(text: str, fault: str) -> View:
    """``"index misses A1, B2"`` -> :class:`View`; a ValidationError that shows the forms otherwise."""
    words = " ".join(text.split())
    forms = f"{BEHIND} N, {MISSES} A1[, B2...], {INDEX_MISSES} A1[, ...] (A1[k]: the k-th action's item of a call)"
    if words.startswith(f"{BEHIND} "):
        value = words[len(BEHIND) + 1 :]
        if not value.isdigit() or int(value) < 1:
            raise ValidationError(f"{fault} ({text}): {BEHIND} takes a whole number of writes, 1 or more")
        if fault != "stale-read":
            raise ValidationError(f"{fault} ({text}): only stale-read lags {BEHIND} N writes; use {MISSES} A1")
        return View(BEHIND, int(value))
    for kind in (INDEX_MISSES, MISSES):
        if words.startswith(f"{kind} "):
            writes = []
            for part in words[len(kind) + 1 :].split(","):
                match = _WRITE.match(part.strip())
                if match is None:
                    raise ValidationError(
                        f"{fault} ({text}): {part.strip()!r} is not a call, e.g. A1 or A1[0]; {forms}"
                    )
                action = match["action"]
                writes.append(Write(match["actor"], int(match["n"]), None if action is None else int(action)))
            if len(set(writes)) != len(writes):
                raise ValidationError(f"{fault} ({text}): a write is named twice")
            if kind == INDEX_MISSES and fault != "stale-read":
                raise ValidationError(f"{fault} ({text}): {INDEX_MISSES} is a stale-read view; use {MISSES}")
            return View(kind, writes=tuple(sorted(writes)))
    raise ValidationError(f"{fault} ({text}): not a view; name one as {forms}")


__all__ = ["BEHIND", "INDEX_MISSES", "MISSES", "View", "Write", "parse_view"]

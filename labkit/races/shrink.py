"""Shrinking a counterexample: the failing order with the fewest context switches, and only the faults it needs.

A *context switch* is a turn that goes to another task than the turn before: ``A A B B`` has
one, ``A B A B`` three. A found failure is re-run in smaller shapes, each a real run (setup,
the order as far as it can be followed, the invariant): first without its fault, then with one
block of a task's consecutive turns merged into that task's block before it or after it. A
candidate that still fails, with fewer switches (or fewer faults), becomes the new best; the
search starts again from it, until no candidate is better or the shrinking budget (its own,
stated in the result) is spent — then the counterexample stays the one the search found.
The order a candidate really ran (its turns) is what is kept, so the counterexample replays
exactly. A lesson-sized race reads as "A reads, B reads, A writes, B writes": ``A B A B``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from .calls import Trace
from .interleave import Interleaving


class Attempts(Protocol):
    """What shrinking needs of the runner: one real run of a candidate order with faults."""

    def attempt(self, order: Sequence[str], faults: tuple[str, ...]) -> tuple[Interleaving, Trace, str | None]: ...


@dataclass(frozen=True)
class Shrunk:
    """The smallest failing order found: its turns, faults, run and message, and what shrinking cost."""

    order: tuple[str, ...]
    faults: tuple[str, ...]
    res: Interleaving
    message: str
    runs: int
    budget: int
    #: False: the budget ran out first (the order is then the one the search found)
    done: bool
    switches_before: int
    switches_after: int
    faults_dropped: bool = False

    def statement(self) -> str:
        """What shrinking did, in one sentence (``Exploration.shrink``)."""
        cost = f"{self.runs:,} run(s) of a shrinking budget of {self.budget:,}"
        if not self.done:
            return (
                f"not shrunk: the shrinking budget of {self.budget:,} runs ran out before shrinking was "
                f"done; the counterexample is the one the search found ({self.switches_before} context switches)"
            )
        parts = []
        if self.switches_after < self.switches_before:
            parts.append(f"from {self.switches_before} to {self.switches_after} context switches")
        if self.faults_dropped:
            parts.append("without the fault it did not need")
        if parts:
            return f"shrunk {', '.join(parts)} in {cost}"
        return f"already the smallest: no order with fewer context switches fails ({cost})"


def switches(order: Sequence[str]) -> int:
    """How many turns go to another task than the turn before."""
    return sum(1 for a, b in zip(order, order[1:], strict=False) if a != b)


def _blocks(order: Sequence[str]) -> list[list[str]]:
    blocks: list[list[str]] = []
    for name in order:
        if blocks and blocks[-1][0] == name:
            blocks[-1].append(name)
        else:
            blocks.append([name])
    return blocks


def candidates(order: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Orders with fewer switches: one block merged into its task's block before or after it, fewest first
    (and, among as few, the first by name: ``A B B A`` before ``B A A B``)."""
    blocks = _blocks(order)
    seen: set[tuple[str, ...]] = set()
    found: list[tuple[str, ...]] = []
    for i, block in enumerate(blocks):
        task = block[0]
        before = next((j for j in range(i - 1, -1, -1) if blocks[j][0] == task), None)
        after = next((j for j in range(i + 1, len(blocks)) if blocks[j][0] == task), None)
        for j in (before, after):
            if j is None:
                continue
            moved = [list(b) for b in blocks]
            moved[j].extend(block)
            del moved[i]
            flat = tuple(name for b in moved for name in b)
            if flat not in seen and flat != tuple(order):
                seen.add(flat)
                found.append(flat)
    yield from sorted(found, key=lambda o: (switches(o), o))  # ties: the order that reads first by name


def shrink(
    runner: Attempts,
    order: Sequence[str],
    faults: tuple[str, ...],
    res: Interleaving,
    message: str,
    budget: int,
) -> Shrunk:
    """The failing order with the fewest switches found within ``budget`` runs (module docstring)."""
    best_order, best_faults, best_res, best_message = tuple(order), tuple(faults), res, message
    start = switches(best_order)
    runs = 0
    improved = True
    while improved:
        improved = False
        tries: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        if best_faults:
            tries.append((best_order, ()))
        tries += [(c, best_faults) for c in candidates(best_order)]
        for cand, cand_faults in tries:
            if runs >= budget:
                return Shrunk(tuple(order), tuple(faults), res, message, runs, budget, False, start, start)
            got, trace, verdict = runner.attempt(cand, cand_faults)
            runs += 1
            if verdict is None:
                continue
            taken = trace.turns
            if (len(cand_faults), switches(taken)) < (len(best_faults), switches(best_order)):
                best_order, best_faults, best_res, best_message = taken, cand_faults, got, verdict
                improved = True
                break
    return Shrunk(
        best_order,
        best_faults,
        best_res,
        best_message,
        runs,
        budget,
        True,
        start,
        switches(best_order),
        faults_dropped=len(best_faults) < len(faults),
    )


__all__ = ["Attempts", "Shrunk", "candidates", "shrink", "switches"]

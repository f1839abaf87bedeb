"""Replay files: read back what a failing exploration wrote, as what ``run_interleaving`` replays.

``result.save("race.json")`` (:meth:`~labkit.races.explore.Exploration.save`, in :data:`FORMAT`) writes
the actor names, the counterexample's order and faults, the
strategy, the seed, the invariant's message, the original (unshrunk) order and the labkit
version. ``labkit.races.load("race.json")`` gives a :class:`Replay`; ``replay.run(actors,
conn=conn, setup=setup)`` checks that the actors are the ones the file names and runs
``run_interleaving(actors, replay.order, conn=conn, faults=list(replay.faults))``. A file from
another labkit version, or whose actors differ from the ones given, is one clear error naming the
difference: an order is only meaningful for the code and the labkit that found it.

This module knows the file, not the exploration that writes it (nothing here imports explore).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..shared.compat import VERSION as __version__
from ..shared.errors import ValidationError

if TYPE_CHECKING:
    from ..shared.backend import Connection
    from .interleave import Interleaving
    from .types import Actor

#: The replay file format (a field of the file).
FORMAT = 1


@dataclass(frozen=True)
class Replay:
    """What a replay file holds: enough to run the counterexample again, and to say where it came from."""

    actors: tuple[str, ...]
    order: str
    faults: tuple[str, ...]
    strategy: str
    seed: int | None
    message: str | None
    original: str | None
    version: str

    def check(self, actors: Iterable[str]) -> None:
        """ValidationError naming the difference unless ``actors`` are the file's actors."""
        given, wanted = set(actors), set(self.actors)
        if given == wanted:
            return
        parts = []
        if missing := sorted(wanted - given):
            parts.append(f"the file's {', '.join(map(repr, missing))} are not among them")
        if extra := sorted(given - wanted):
            parts.append(f"{', '.join(map(repr, extra))} are not in the file")
        raise ValidationError(
            f"the replay file was written for actors {sorted(wanted)}, not {sorted(given)}: {'; '.join(parts)}. "
            "Pass the actors the failing exploration ran (same names), or run explore again"
        )

    def run(
        self,
        actors: Mapping[str, Actor],
        *,
        conn: Connection,
        setup: Callable[[], Any] | None = None,
        timeout: float = 10.0,
    ) -> Interleaving:
        """``setup()``, then the counterexample again: ``run_interleaving(actors, order, faults=...)``."""
        from .interleave import run_interleaving

        self.check(actors)
        if setup is not None:
            setup()
        return run_interleaving(actors, self.order, conn=conn, timeout=timeout, faults=list(self.faults) or None)


def load(path: str | Path, actors: Iterable[str] | None = None) -> Replay:
    """Read a replay file (checked against this labkit's version, and ``actors`` if given)."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValidationError(f"cannot read the replay file {source}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("order"), str):
        raise ValidationError(
            f"{source} is not a labkit replay file (format {FORMAT}): write one with result.save(path)"
        )
    if data.get("labkit") != __version__:
        raise ValidationError(
            f"the replay file {source} was written by labkit {data.get('labkit')}, this is labkit {__version__}: "
            "an order replays only on the labkit that found it; run explore again with this version"
        )
    replay = Replay(
        actors=tuple(str(a) for a in data.get("actors") or ()),
        order=data["order"],
        faults=tuple(str(f) for f in data.get("faults") or ()),
        strategy=str(data.get("strategy") or ""),
        seed=data.get("seed"),
        message=data.get("message"),
        original=data.get("original"),
        version=str(data["labkit"]),
    )
    if actors is not None:
        replay.check(actors)
    return replay


__all__ = ["FORMAT", "Replay", "load"]

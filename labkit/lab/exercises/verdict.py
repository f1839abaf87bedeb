"""What a check says: a :class:`Verdict` made of :class:`Finding` s, for a terminal and a notebook."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...shared.compat import require

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...races import Interleaving

#: Finding kinds that are not about concurrency: the check stopped before racing anything.
NOT_SOLVED = "not-solved"


@dataclass(frozen=True)
class Finding:
    """One way the solution broke: a kind, plain words, and the forced order that showed it.

    ``kind`` is one of the classic mistakes (``read-modify-write``, ``condition-without-retry``,
    ``check-then-write-gsi``, ``check-then-write-scan``, ``check-then-write``,
    ``transaction-without-conditions``, ``separate-calls``, ``old-marker-kept``, ``no-markers``,
    ``missing-normalisation``, ``wrote-then-gave-up``, ``taken-not-refused``, ``conflict-as-taken``,
    ``same-email``, ``unknown-account``) or a plain failure (``wrong-signature``, ``timeout``,
    ``error``, ``deleted-table``, ``outside-keys``, ``wrong-client``, ``too-many-calls``,
    ``endless-retry``, ``wrong-result``, ``not-solved``). Each exercise's task bullets name every kind
    its check can give (tests/lessons/test_exercise_notebooks.py).
    ``order`` is the replayable order string (``"A B A B"``) when a race showed it;
    ``interleaving`` is that run, for :meth:`figure`.
    """

    kind: str
    message: str
    order: str | None = None
    interleaving: Interleaving | None = field(default=None, repr=False, compare=False)

    def figure(self) -> Figure | None:
        """The swim-lane timeline of the order that broke it (None when no race showed it)."""
        if self.interleaving is None:
            return None
        require("matplotlib", "lab", "the exercise's timeline (Finding.figure)")
        from ..plots import timeline

        fig = timeline(self.interleaving)
        return fig

    @property
    def replay(self) -> str | None:
        """One call that replays the order that broke it (after putting back the starting items)."""
        if self.interleaving is None or self.order is None:
            return None
        actors = []
        for name, out in self.interleaving.results.items():
            args = "".join(f", {a!r}" for a in getattr(out, "args", ()))
            actors.append(f"{name!r}: lambda c: solution(c, table_name{args})")
        return f"labkit.races.run_interleaving({{{', '.join(actors)}}}, {self.order!r}, conn=conn)"

    def __str__(self) -> str:
        where = f"order {self.order}: " if self.order else ""
        return f"[{self.kind}] {where}{self.message}"


@dataclass(frozen=True)
class Verdict:
    """The result of :func:`labkit.lab.exercises.check`: ``passed``, ``findings`` and ``notes``.

    ``str(verdict)`` reads well in a terminal; in a notebook the verdict renders as HTML with
    the swim-lane timeline of every order that broke the solution.
    """

    exercise: str
    passed: bool
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    tried: str = ""
    seconds: float = 0.0

    @property
    def not_solved(self) -> bool:
        """True when the solution is still the stub (it raised NotImplementedError)."""
        return any(f.kind == NOT_SOLVED for f in self.findings)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kind of every finding, in order (``("read-modify-write",)``)."""
        return tuple(f.kind for f in self.findings)

    @property
    def headline(self) -> str:
        if self.passed:
            return f"{self.exercise}: PASSED"
        if self.not_solved:
            return f"{self.exercise}: not solved yet"
        return f"{self.exercise}: FAILED ({', '.join(dict.fromkeys(self.kinds))})"

    def figures(self) -> list[Figure]:
        """One timeline per finding that has a forced order."""
        return [fig for f in self.findings if (fig := f.figure()) is not None]

    def __str__(self) -> str:
        lines = [self.headline]
        for f in self.findings:
            lines.append(f"  - {f}")
            if f.replay:
                lines.append(f"    replay: {f.replay}")
        lines.extend(f"  note: {n}" for n in self.notes)
        if self.tried and not self.not_solved:
            lines.append(f"  checked: {self.tried} in {self.seconds:.1f} s")
        if not self.passed:
            lines.append(f"  stuck? labkit.lab.exercises.hint({self.exercise!r}, 1)")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        icon = "✅" if self.passed else ("✏️" if self.not_solved else "❌")
        lines = [f"**{icon} {self.headline}**", ""]
        for f in self.findings:
            order = f" — order `{f.order}`" if f.order else ""
            lines.append(f"- **{f.kind}**{order}: {f.message}")
        lines.extend(f"- *note*: {n}" for n in self.notes)
        if self.tried and not self.not_solved:
            lines += ["", f"*checked: {self.tried} in {self.seconds:.1f} s*"]
        if not self.passed:
            lines += ["", f"Stuck? `labkit.lab.exercises.hint({self.exercise!r}, 1)`"]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = "#2e7d32" if self.passed else ("#6d6d6d" if self.not_solved else "#c62828")
        parts = [
            f'<div style="border-left:4px solid {colour};padding-left:8px">',
            f'<p style="color:{colour};font-weight:bold">{html.escape(self.headline)}</p><ul>',
        ]
        for f in self.findings:
            order = f" — order <code>{html.escape(f.order)}</code>" if f.order else ""
            parts.append(f"<li><b>{html.escape(f.kind)}</b>{order}: {html.escape(f.message)}")
            png = _png(f.figure())
            if png:
                parts.append(
                    f'<br><img alt="timeline of order {html.escape(f.order or "")}" src="data:image/png;base64,{png}">'
                )
            parts.append("</li>")
        parts.extend(f"<li><i>note</i>: {html.escape(n)}</li>" for n in self.notes)
        parts.append("</ul>")
        if self.tried and not self.not_solved:
            parts.append(f"<p><small>checked: {html.escape(self.tried)} in {self.seconds:.1f} s</small></p>")
        if not self.passed:
            parts.append(f"<p>Stuck? <code>labkit.lab.exercises.hint({self.exercise!r}, 1)</code></p>")
        parts.append("</div>")
        return "".join(parts)


def _png(fig: Figure | None) -> str:
    if fig is None:
        return ""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")

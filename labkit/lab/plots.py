"""Pictures of races: a swim-lane timeline, anomalies vs concurrency, an outcome grid.

Every function draws on a fresh :class:`matplotlib.figure.Figure` (no pyplot state,
no ``plt.show()``) — or on the ``ax`` you pass — and returns the Figure. Jupyter shows
a returned Figure once; call ``fig.savefig(...)`` to keep it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..shared.compat import require

try:
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.textpath import TextPath
except ModuleNotFoundError:
    require("matplotlib", "lab", "labkit.lab.plots")  # not installed: one line naming the extra that brings it
    raise

from ..races.history import overwrites
from ..shared.errors import ValidationError
from ..shared.validation import check_columns

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from pandas.io.formats.style import Styler

    from ..races import Interleaving

#: Bar colours: a call that succeeded, and one that ended in an error.
OK_COLOR = "#4C72B0"
ERROR_COLOR = "#C44E52"
#: Edge colour and hatch of a marked call (an outdated read, an overwrite, ...).
MARK_COLOR = "#DD8452"
MARK_HATCH = "//"
#: Cell colours of the outcome grid: no anomaly, anomaly.
GOOD_COLOR = "#D8F0D8"
BAD_COLOR = "#F4C7C3"
NEUTRAL_COLOR = "#FFFFFF"
#: Text written outside the bars, and the paleness of calls made after the forced order.
TEXT_COLOR = "#333333"
FREE_ALPHA = 0.55
LABEL_SIZE = 8
#: Height of one label line under a bar, in lane units.
LINE_STEP = 0.16
#: Font size of a mark label above its bar, and the rise (points) of a mark stacked above a neighbour's.
MARK_SIZE = 8
MARK_STEP = 10

Marks = Mapping[tuple[str, int], str]


def _axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        root = ax.get_figure(root=True)
        if not isinstance(root, Figure):
            raise ValidationError("the ax you passed belongs to no figure; create it with a Figure")
        return root, ax
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def detected_marks(history: pd.DataFrame) -> dict[tuple[str, int], str]:
    """Marks from :func:`labkit.lab.invariants.overwrites`: each outdated read and the write that used it.

    The read is labelled "outdated by X", not "stale": it was fresh when made, and X's write replaced
    its value afterwards ("stale" is the fault ``stale-read``, an answer already old when given).
    """
    marks: dict[tuple[str, int], str] = {}
    for row in overwrites(history).to_dict("records"):
        marks[(str(row["actor"]), int(row["read_seq"]))] = f"outdated by {row['other_actor']}"
        marks[(str(row["actor"]), int(row["write_seq"]))] = f"overwrites {row['other_actor']}"
    return marks


def _text_width(text: str, fontsize: float) -> float:
    """The width of ``text`` in points at ``fontsize`` (widest line), measured from the glyphs."""
    return max(TextPath((0, 0), line, size=fontsize).get_extents().width for line in text.split("\n"))


def _forced_end(history: pd.DataFrame) -> float | None:
    """When the last call of the forced order ended (s), if calls ran after it; else None."""
    if "turn" not in history.columns or history.empty:
        return None
    forced = history["turn"].notna()
    if forced.all() or not forced.any():
        return None
    return float(history.loc[forced, "end"].max())


def timeline(
    res: Interleaving | pd.DataFrame,
    marks: Marks | None = None,
    *,
    detect: bool = True,
    show_keys: bool = False,
    ax: Axes | None = None,
) -> Figure:
    """Swim lanes, one per actor, a bar per DynamoDB call labelled with its operation.

    ``marks`` maps ``(actor, seq)`` to a label (``{("B", 0): "outdated by A"}``); marked calls
    are hatched and labelled above the bar. Without marks and with ``detect=True`` the
    marks come from :func:`detected_marks`: a read whose value another actor's write replaced
    before the reader wrote (see :func:`labkit.lab.invariants.overwrites`). Failed calls
    are red, with their error code written in full under the bar. A label that does not fit
    inside its bar is written under it, never cut. Calls that ran after the forced order
    (a retry, say: ``turn`` is empty in the history) are drawn paler, right of a dashed line
    where the forced order ended. Times are milliseconds since the first call began (a run's
    setup — clients, threads — is not drawn). Mark labels that would touch in a lane are stacked.
    """
    history = res if isinstance(res, pd.DataFrame) else res.history
    check_columns("timeline", history.columns, ("actor", "operation"), hint="pass an Interleaving or its .history")
    if marks is None:
        marks = detected_marks(history) if detect and len(history) else {}
    if isinstance(res, pd.DataFrame):
        actors = list(dict.fromkeys(history["actor"]))
    else:
        actors = list(dict.fromkeys([*res.order, *history["actor"]]))
    lanes = {actor: i for i, actor in enumerate(actors)}
    size = (9.0, 1.6 + 1.1 * max(len(actors), 1))
    fig, axes = _axes(ax, size)
    origin = float(history["start"].min()) if len(history) else 0.0  # the first call, not the run's setup
    x_max = 1000 * (float(history["end"].max()) - origin) * 1.04 if len(history) else 1.0
    # points per millisecond, to decide whether a label fits in its bar (the axes take
    # roughly the figure's width less the lane labels)
    fig_width_pt = fig.get_size_inches()[0] * 72
    pt_per_ms = max(fig_width_pt - 90, 100) / x_max
    forced_end = _forced_end(history)
    # per lane: where the last label written under a bar ends (ms), and how many lines it took
    under: dict[str, tuple[float, int]] = {}
    # per lane: where the last mark label above a bar ends (ms), and how many levels it was raised
    above: dict[str, tuple[float, int]] = {}
    for call in history.to_dict("records"):
        y = lanes[call["actor"]]
        start, width = 1000 * (call["start"] - origin), 1000 * (call["end"] - call["start"])
        failed = call["outcome"] != "ok"
        free = "turn" in call and pd.isna(call["turn"]) and forced_end is not None
        mark = marks.get((str(call["actor"]), int(call["seq"])))
        axes.barh(
            y,
            width,
            left=start,
            height=0.6,
            color=ERROR_COLOR if failed else OK_COLOR,
            alpha=FREE_ALPHA if free else 1.0,
            edgecolor=MARK_COLOR if mark else "white",
            linewidth=2 if mark else 0.5,
            hatch=MARK_HATCH if mark else None,
        )
        label = str(call["operation"])
        if show_keys and call.get("key"):
            label += f"\n{call['key']}"
        below: list[str] = []
        if _text_width(label, LABEL_SIZE) + 4 <= width * pt_per_ms:
            axes.text(start + width / 2, y, label, ha="center", va="center", fontsize=LABEL_SIZE, color="white")
        else:
            below.append(label)
        if failed:
            below.append(str(call["outcome"]).removesuffix("Exception"))
        if below:
            text = "\n".join(below)
            half = _text_width(text, LABEL_SIZE) / 2 / pt_per_ms + 0.5 / pt_per_ms
            centre = start + width / 2
            lines = text.count("\n") + 1
            last_end, last_lines = under.get(call["actor"], (float("-inf"), 0))
            drop = LINE_STEP * last_lines if centre - half < last_end else 0.0  # do not overlap
            axes.text(
                centre,
                y + 0.33 + drop,
                text,
                ha="center",
                va="top",
                zorder=3,
                fontsize=LABEL_SIZE,
                color=ERROR_COLOR if failed else TEXT_COLOR,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
            )
            under[call["actor"]] = (centre + half, lines + (last_lines if drop else 0))
        if mark:
            centre = start + width / 2
            half = (1.1 * _text_width(mark, MARK_SIZE) + 6) / 2 / pt_per_ms  # bold is wider
            last_end, level = above.get(call["actor"], (float("-inf"), -1))
            level = level + 1 if centre - half < last_end else 0  # would touch the previous mark: one line up
            above[call["actor"]] = (centre + half, level)
            axes.annotate(
                mark,
                (centre, y - 0.3),
                xytext=(0, 3 + MARK_STEP * level),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=MARK_SIZE,
                color=MARK_COLOR,
                fontweight="bold",
            )
    axes.set_yticks(range(len(actors)), [f"actor {a}" for a in actors])
    axes.set_ylim(len(actors) + 0.1, -0.8)
    axes.set_xlim(0, x_max)
    axes.set_xlabel("time since the first call began (ms)")
    title = "" if isinstance(res, pd.DataFrame) else f"order {res.label}"
    handles = [Patch(color=OK_COLOR, label="ok"), Patch(color=ERROR_COLOR, label="error")]
    if forced_end is not None:
        free_calls = int(history["turn"].isna().sum())
        end_ms = 1000 * (forced_end - origin)
        axes.axvline(end_ms, color=TEXT_COLOR, linestyle="--", linewidth=1, zorder=1)
        axes.text(
            end_ms,
            -0.78,
            " forced order ends;\n later calls run freely",
            ha="left",
            va="top",
            fontsize=LABEL_SIZE,
            color=TEXT_COLOR,
        )
        title += f"{' + ' if title else ''}{free_calls} call(s) after it"
        handles.append(Patch(color=OK_COLOR, alpha=FREE_ALPHA, label="after the forced order"))
    axes.set_title(title, loc="left")
    if marks:
        handles.append(Patch(facecolor="white", edgecolor=MARK_COLOR, hatch=MARK_HATCH, label="marked"))
    axes.legend(
        handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, ncols=len(handles), frameon=False
    )
    axes.grid(axis="x", alpha=0.3)
    return fig


def sweep_plot(
    df: pd.DataFrame,
    y: str = "anomalies",
    *,
    x: str = "threads",
    throughput: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Anomalies (or any column ``y``) against concurrency, from :func:`labkit.races.sweep`.

    With ``throughput=True`` and a ``throughput`` column, ops/s is drawn dashed on a
    second y axis.
    """
    check_columns("sweep_plot", df.columns, (x, y))
    fig, axes = _axes(ax, (6, 3.5))
    axes.plot(df[x], df[y], marker="o", color=ERROR_COLOR, label=y.replace("_", " "))
    axes.set_xlabel("concurrent workers" if x == "threads" else x)
    axes.set_ylabel(y.replace("_", " "))
    axes.set_xticks(list(df[x]))
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    if throughput and "throughput" in df.columns:
        twin = axes.twinx()
        twin.plot(df[x], df["throughput"], marker="s", linestyle="--", color=OK_COLOR, label="throughput")
        twin.set_ylabel("operations / s")
        twin.set_ylim(bottom=0)
    axes.set_title(f"{y.replace('_', ' ')} vs concurrency", loc="left")
    return fig


def _is_anomaly(value: Any) -> bool:
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()  # numpy scalar
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    return False


def outcome_heatmap(
    table: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    bad: Mapping[str, Any] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """A grid for :func:`labkit.races.all_interleavings`: one row per order, one column per outcome.

    For a column named in ``bad``, a cell is red when it equals ``bad[c]`` and green
    otherwise; a boolean column is red where True, green where False; other cells stay
    white. Every cell shows its value.
    """
    check_columns("outcome_heatmap", table.columns, ("order",), hint="pass the frame all_interleavings returns")
    shown = list(columns) if columns is not None else [c for c in table.columns if c != "order"]
    if not shown:
        raise ValidationError("no outcome columns to show; pass outcome= to all_interleavings")
    bad = bad or {}
    grid = [[_verdict(row[c], c, bad) for c in shown] for row in table.to_dict("records")]
    fig, axes = _axes(ax, (1.8 + 1.6 * len(shown), 0.8 + 0.38 * len(table)))
    palette = {True: BAD_COLOR, False: GOOD_COLOR, None: NEUTRAL_COLOR}
    rgb = [[_rgb(palette[cell]) for cell in row] for row in grid]
    axes.imshow(rgb, aspect="auto")
    for i, row in enumerate(table.to_dict("records")):
        for j, c in enumerate(shown):
            axes.text(j, i, _short(row[c]), ha="center", va="center", fontsize=9)
    axes.set_xticks(range(len(shown)), [c.replace("_", " ") for c in shown])
    axes.xaxis.tick_top()
    axes.set_yticks(range(len(table)), list(table["order"]), fontfamily="monospace")
    axes.set_ylabel("order")
    n_bad = sum(any(cell is True for cell in row) for row in grid)
    axes.set_title(f"{n_bad} of {len(table)} orders show an anomaly", loc="left", pad=24)
    return fig


def _verdict(value: Any, column: str, bad: Mapping[str, Any]) -> bool | None:
    """True for an anomaly, False for a good value, None when the column is not judged."""
    if column in bad:
        return bool(value == bad[column])
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    return value if isinstance(value, bool) else None


def _rgb(color: str) -> tuple[float, float, float]:
    h = color.lstrip("#")
    return (int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255)


def _short(value: Any) -> str:
    text = str(value)
    text = text.removesuffix("Exception")
    return text if len(text) <= 18 else text[:17] + "…"


def outcome_css(table: pd.DataFrame, anomaly: str) -> pd.DataFrame:
    """A CSS string per cell: rows where ``anomaly`` is truthy red, the others green."""
    check_columns("outcome_css", table.columns, (anomaly,))
    colours = [BAD_COLOR if _is_anomaly(v) else GOOD_COLOR for v in table[anomaly]]
    css = [[f"background-color: {c}"] * len(table.columns) for c in colours]
    return pd.DataFrame(css, index=table.index, columns=table.columns)


def style_outcomes(table: pd.DataFrame, anomaly: str) -> Styler:
    """The all_interleavings table with the rows where ``anomaly`` is truthy shaded red."""
    css = outcome_css(table, anomaly)
    return table.style.apply(lambda _: css, axis=None).hide(axis="index")


__all__ = [
    "detected_marks",
    "outcome_css",
    "outcome_heatmap",
    "style_outcomes",
    "sweep_plot",
    "timeline",
]

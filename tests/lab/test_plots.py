"""Pictures: timeline lanes and bars, the sweep plot, the outcome grid and table styling."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from labkit.lab.plots import (  # noqa: E402
    BAD_COLOR,
    FREE_ALPHA,
    GOOD_COLOR,
    detected_marks,
    outcome_css,
    outcome_heatmap,
    style_outcomes,
    sweep_plot,
    timeline,
)
from labkit.shared.backend import Connection  # noqa: E402
from labkit.shared.errors import ValidationError  # noqa: E402
from tests.races.histories import Row, history_of  # noqa: E402
from tests.races.increments import naive_increment, race_two  # noqa: E402


def bars(fig: Figure) -> list[Rectangle]:
    ax = fig.axes[0]
    return [p for c in ax.containers for p in c]


def fake_history() -> pd.DataFrame:
    rows: list[Row] = [
        ("A", 0, 0, "GetItem", 0.000, 0.002, "ok"),
        ("B", 0, 1, "GetItem", 0.002, 0.004, "ok"),
        ("C", 0, 2, "GetItem", 0.004, 0.006, "ok"),
        ("A", 1, 3, "UpdateItem", 0.006, 0.008, "ok"),
        ("B", 1, 4, "UpdateItem", 0.008, 0.010, "ConditionalCheckFailedException"),
    ]
    return history_of(rows)


def test_timeline__abab_race__two_lanes_four_bars_outdated_read_and_overwrite_marked(
    tconn: Connection,
) -> None:
    """A forced ABAB lost update draws 2 lanes, 4 bars, and marks B's outdated read and overwrite."""
    res = race_two(tconn, naive_increment, "ABAB")
    fig = timeline(res)
    ax = fig.axes[0]
    assert isinstance(fig, Figure)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["actor A", "actor B"]
    assert len(bars(fig)) == 4
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("GetItem") == 2 and labels.count("PutItem") == 2
    assert detected_marks(res.history) == {("B", 0): "outdated by A", ("B", 1): "overwrites A"}
    notes = [a.get_text() for a in ax.texts if a.get_text() in ("outdated by A", "overwrites A")]
    assert sorted(notes) == ["outdated by A", "overwrites A"]
    assert sum(1 for b in bars(fig) if b.get_hatch()) == 2


def test_timeline__serial_order__marks_nothing(tconn: Connection) -> None:
    """AABB loses nothing, so nothing is marked."""
    fig = timeline(race_two(tconn, naive_increment, "AABB"))
    assert len(bars(fig)) == 4
    assert not any(b.get_hatch() for b in bars(fig))


def test_timeline__history_frame_and_explicit_marks__lanes_bars_and_error_colour() -> None:
    """A bare history works too; explicit marks win over detection; errors are red."""
    fig = timeline(fake_history(), marks={("C", 0): "the read that matters"})
    ax = fig.axes[0]
    assert len(ax.get_yticks()) == 3
    assert len(bars(fig)) == 5
    hatched = [b for b in bars(fig) if b.get_hatch()]
    assert len(hatched) == 1
    assert "the read that matters" in [t.get_text() for t in ax.texts]
    assert "ConditionalCheckFailed" in [line for t in ax.texts for line in t.get_text().split("\n")]


def test_timeline__given_ax__draws_there_and_returns_its_figure() -> None:
    """Passing ax draws on it and returns the figure that owns it."""
    fig = Figure()
    ax = fig.add_subplot()
    assert timeline(fake_history(), ax=ax) is fig
    assert len(bars(fig)) == 5


def test_timeline__not_a_history__raises_validation_error() -> None:
    """Anything without actor and operation columns is refused."""
    with pytest.raises(
        ValidationError, match=r"^timeline needs the column\(s\) .*; pass an Interleaving or its .history$"
    ):
        timeline(pd.DataFrame({"x": [1]}))


def test_sweep_plot__sweep_frame__one_point_per_thread_count_and_throughput_axis() -> None:
    """Anomalies vs threads as one line with a point per thread count, throughput on a twin axis."""
    df = pd.DataFrame({"threads": [1, 2, 4, 8], "anomalies": [0, 3, 9, 20], "throughput": [100.0, 150.0, 170.0, 180.0]})
    fig = sweep_plot(df)
    assert len(fig.axes) == 2
    line = fig.axes[0].lines[0]
    assert list(np.asarray(line.get_xdata())) == [1, 2, 4, 8] and list(np.asarray(line.get_ydata())) == [0, 3, 9, 20]
    assert len(sweep_plot(df, throughput=False).axes) == 1


def test_sweep_plot__missing_column__raises_validation_error() -> None:
    """A frame without the plotted column is refused, naming it."""
    with pytest.raises(ValidationError, match=r"^sweep_plot needs the column\(s\) 'anomalies'; the frame has \["):
        sweep_plot(pd.DataFrame({"threads": [1]}))


def outcome_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "order": ["A A B B", "A B A B", "A B B A", "B A A B", "B A B A", "B B A A"],
            "final": [2, 1, 1, 1, 1, 2],
            "lost_update": [False, True, True, True, True, False],
        }
    )


def test_outcome_heatmap__six_orders__grid_of_six_rows_and_anomalies_counted() -> None:
    """One row per order, one column per outcome, and the title counts anomalous orders."""
    fig = outcome_heatmap(outcome_table())
    ax = fig.axes[0]
    image = ax.images[0].get_array()
    assert image is not None and image.shape[:2] == (6, 2)
    assert [t.get_text() for t in ax.get_yticklabels()][1] == "A B A B"
    assert len(ax.texts) == 12
    assert ax.get_title(loc="left") == "4 of 6 orders show an anomaly"


def test_outcome_heatmap__bad_values__mark_those_cells() -> None:
    """bad={"final": 1} turns the final column into a verdict too."""
    fig = outcome_heatmap(outcome_table(), ["final"], bad={"final": 1})
    image = fig.axes[0].images[0].get_array()
    assert image is not None and image.shape[:2] == (6, 1)
    assert fig.axes[0].get_title(loc="left") == "4 of 6 orders show an anomaly"


def test_outcome_heatmap__not_an_outcome_table__raises_validation_error() -> None:
    """Without an order column the frame did not come from all_interleavings."""
    with pytest.raises(
        ValidationError,
        match=r"^outcome_heatmap needs the column\(s\) 'order'; .*; pass the frame all_interleavings returns$",
    ):
        outcome_heatmap(pd.DataFrame({"x": [1]}))


def test_style_outcomes__anomalous_rows__shaded_red() -> None:
    """Rows with the anomaly are red, the others green; the Styler renders."""
    css = outcome_css(outcome_table(), "lost_update")
    assert css.shape == (6, 3)
    assert list(css["order"]) == [
        f"background-color: {c}" for c in [GOOD_COLOR, BAD_COLOR, BAD_COLOR, BAD_COLOR, BAD_COLOR, GOOD_COLOR]
    ]
    html = style_outcomes(outcome_table(), "lost_update").to_html()
    assert BAD_COLOR in html and "A B A B" in html
    with pytest.raises(ValidationError, match=r"^outcome_css needs the column\(s\) 'nope'; the frame has \["):
        style_outcomes(outcome_table(), "nope")


def retry_history() -> pd.DataFrame:
    """A forced A B A B where B's write fails its condition and B retries after the order."""
    rows: list[Row] = [
        ("A", 0, 0, "GetItem", 0.001, 0.005, "ok"),
        ("B", 0, 1, "GetItem", 0.005, 0.0065, "ok"),
        ("A", 1, 2, "UpdateItem", 0.008, 0.012, "ok"),
        ("B", 1, 3, "UpdateItem", 0.012, 0.0145, "ConditionalCheckFailedException"),
        ("B", 2, None, "GetItem", 0.024, 0.0252, "ok"),
        ("B", 3, None, "UpdateItem", 0.026, 0.033, "ok"),
    ]
    frame = history_of(rows)
    frame["turn"] = frame["turn"].astype("Int64")
    return frame


def test_timeline__short_and_failed_calls__every_label_whole_and_inside_its_bar_or_the_axes() -> None:
    """No label is cut: each sits inside its bar, or (too long for it) under it within the axes."""
    fig = timeline(retry_history())
    FigureCanvasAgg(fig).draw()  # type: ignore[no-untyped-call]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    ax = fig.axes[0]
    ax_box = ax.get_window_extent(renderer)
    boxes = [b.get_window_extent(renderer) for b in bars(fig)]
    lines = [line for t in ax.texts for line in t.get_text().split("\n")]
    assert "ConditionalCheckFailed" in lines  # the full code, on its own line under the bar
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        assert ax_box.x0 - 1 <= box.x0 and box.x1 <= ax_box.x1 + 1, f"{text.get_text()!r} leaves the axes"
        inside = [b for b in boxes if b.overlaps(box)]
        for bar in inside:  # a label that touches a bar lies wholly within it
            assert bar.x0 <= box.x0 and box.x1 <= bar.x1, f"{text.get_text()!r} is cut by its bar"
    assert lines.count("GetItem") == 3
    assert any(t.get_text() == "GetItem" and t.get_color() != "white" for t in ax.texts)


def test_timeline__retry_after_the_order__dashed_boundary_and_pale_bars() -> None:
    """Calls with no turn ran after the forced order: a dashed line at its end, paler bars."""
    fig = timeline(retry_history())
    ax = fig.axes[0]
    [line] = ax.lines
    assert line.get_linestyle() == "--" and np.asarray(line.get_xdata()).tolist() == pytest.approx([13.5, 13.5])
    assert any(t.get_text().startswith(" forced order ends") for t in ax.texts)
    alphas = [b.get_alpha() for b in bars(fig)]
    assert alphas == [1.0, 1.0, 1.0, 1.0, FREE_ALPHA, FREE_ALPHA]
    legend = ax.get_legend()
    assert legend is not None
    assert "after the forced order" in [t.get_text() for t in legend.get_texts()]


def test_timeline__every_call_in_the_order__no_boundary_drawn() -> None:
    """Without calls after the order there is no boundary line and every bar is opaque."""
    fig = timeline(fake_history())
    assert len(fig.axes[0].lines) == 0
    assert {b.get_alpha() for b in bars(fig)} == {1.0}


def test_timeline__neighbouring_labels_under_bars__do_not_overlap() -> None:
    """Two short calls side by side: their labels under the bars are stacked, not overlapped."""
    fig = timeline(retry_history())
    FigureCanvasAgg(fig).draw()  # type: ignore[no-untyped-call]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    under = [t for t in fig.axes[0].texts if t.get_verticalalignment() == "top" and "forced" not in t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in under]
    assert len(boxes) >= 3
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)


def late_history() -> pd.DataFrame:
    """A forced A B A B lost update whose first call began 180 ms into the run (clients and threads first)."""
    rows: list[Row] = [
        ("A", 0, 0, "GetItem", 0.180, 0.192, "ok"),
        ("B", 0, 1, "GetItem", 0.192, 0.1925, "ok"),
        ("A", 1, 2, "PutItem", 0.193, 0.1935, "ok"),
        ("B", 1, 3, "PutItem", 0.1936, 0.1940, "ok"),
    ]
    return history_of(rows)


def test_timeline__first_call_late_in_the_run__axis_starts_at_the_first_call() -> None:
    """The x axis is time since the first call began: the bars fill it, the run's setup is not drawn."""
    fig = timeline(late_history())
    ax = fig.axes[0]
    lefts = [b.get_x() for b in bars(fig)]
    assert lefts[0] == pytest.approx(0.0) and ax.get_xlim()[0] == 0
    assert ax.get_xlim()[1] == pytest.approx(14.0 * 1.04)
    assert ax.get_xlabel() == "time since the first call began (ms)"


def test_timeline__marks_on_neighbouring_short_calls__labels_stacked_not_overlapped() -> None:
    """B's outdated read and its overwrite, two short calls side by side: their mark labels do not touch."""
    marks = {("B", 0): "outdated by A", ("B", 1): "overwrites A"}
    fig = timeline(late_history(), marks)
    FigureCanvasAgg(fig).draw()  # type: ignore[no-untyped-call]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    notes = [t for t in fig.axes[0].texts if t.get_text() in marks.values()]
    assert len(notes) == 2
    first, second = (t.get_window_extent(renderer) for t in notes)
    assert not first.overlaps(second)

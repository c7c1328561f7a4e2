"""The training-curves plot of a short run: its single points show and its titles stay whole on the figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from pcctune.training import plots

METRIC = "eval_sick-trial+stsb-dev+my_own_pairs_dev_file_with_a_long_name_spearman_cosine"


@pytest.fixture
def figure(monkeypatch, tmp_path):
    """The figure ``plot_training`` draws for a 12-step run with one loss entry and one dev evaluation."""
    drawn = []

    def keep(figure, path: Path) -> Path:
        drawn.append(figure)
        return saved(figure, path)

    saved = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", keep)
    history = [{"step": 12, "loss": 0.31}, {"step": 12, METRIC: 0.8191}]
    path = plots.plot_training(history, METRIC, "a-long/model-name: stage pcc (pcc)", tmp_path / "curves.png")
    assert path.stat().st_size > 1000
    return drawn[0]


def test_a_single_point_per_panel_carries_a_visible_marker(figure):
    for ax in figure.axes:
        (line,) = ax.get_lines()
        assert len(line.get_xdata()) == 1
        assert line.get_marker() not in {"", "None", ".", ","}
        assert line.get_markersize() >= 4


def test_titles_are_whole_and_inside_the_figure(figure):
    renderer = FigureCanvasAgg(figure).get_renderer()  # the figure as saved (laid out, then closed)
    titles = [ax.title for ax in figure.axes] + [figure._suptitle]
    assert METRIC in figure.axes[1].get_title().replace("\n", "")
    for title in titles:
        box = title.get_window_extent(renderer)
        assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1, title.get_text()

"""The margins of :mod:`ibemu.plot_layout` hold the plots' text (issue 28: the plots of a
run are laid out without matplotlib's layout engines).  Each figure is caught as it is
saved and drawn again: every axes with its tick labels, axis labels, title and legend
lies inside the figure, and no two of them overlap (the colour bar beside the heatmap
with the level names between them, the two panels of latency.png)."""
from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

import ibemu
from ibemu.plot_layout import EDGE, Margins
from ibemu.plots import plot_link_heatmap


def _boxes(fig: Figure) -> list[Bbox]:
    """Each axes' tight box (its ticks, labels, title, legend), in pixels, as drawn."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    return [ax.get_tightbbox(renderer) for ax in fig.axes]


def _check_inside_and_apart(fig: Figure) -> None:
    page = fig.bbox
    boxes = _boxes(fig)
    for box in boxes:     # inside the page (a pixel of rounding)
        assert box.x0 >= page.x0 - 1 and box.y0 >= page.y0 - 1, (box, page)
        assert box.x1 <= page.x1 + 1 and box.y1 <= page.y1 + 1, (box, page)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)


def test_the_plots_of_a_fabric_with_levels_hold_their_text(tmp_path: Path, saved: dict[str, Figure]) -> None:
    """A 2-level fat tree of 32 directed links (<= HEATMAP_ROW_LABELS): the heatmap names
    every link on the left and the four levels on the right, before the colour bar."""
    toml = tmp_path / "ft.toml"
    toml.write_text('[template]\nname = "fat_tree2"\nradix = 4\nleaves = 4\n'
                    '[scenario]\nname = "ft8"\nduration = "100us"\n'
                    '[[flow]]\nsrc = "h0"\ndst = "h7"\n[[flow]]\nsrc = "h1"\ndst = "h7"\n'
                    '[[flow]]\nsrc = "h2"\ndst = "h7"\n')
    ibemu.run_virtual(ibemu.load_scenario(str(toml)), out_dir=tmp_path / "out", progress=False)
    assert {"throughput.png", "links.png", "links_heatmap.png", "latency.png"} <= set(saved)
    for name in ("throughput.png", "links.png", "links_heatmap.png", "latency.png"):
        _check_inside_and_apart(saved[name])
    heat = saved["links_heatmap.png"]
    assert len(heat.axes) == 2                      # the heatmap (with its level axis) and the colour bar


def test_long_link_names_and_two_latency_panels_fit(tmp_path: Path, saved: dict[str, Figure]) -> None:
    """Link names of 39 characters on the left of a heatmap; latency.png with both
    panels (message latency and the completion time of finite flows)."""
    import numpy as np
    names = ["switch-%02d/port-%02d->switch-%02d/port-%02d WM" % (i, i, i + 1, i) for i in range(6)]
    assert all(len(n) == 9 + 8 + 2 + 9 + 8 + 3 for n in names)        # 39 characters, wide letters too
    times = np.linspace(0.0, 1.0, 5)
    plot_link_heatmap(times, {n: times for n in names}, {}, tmp_path / "h.png", title="long names")
    _check_inside_and_apart(saved["h.png"])
    scn = ibemu.santos_fig1(L=2, R=1)
    scn.duration = ibemu.PS_PER_MS
    for f in scn.flows:
        f.pattern, f.count = "messages", 5          # finite flows: a completion time each
    ibemu.run_virtual(scn, out_dir=tmp_path / "o", progress=False)
    fig = saved["latency.png"]
    assert len(fig.axes) == 2
    _check_inside_and_apart(fig)


def test_adjust_sets_the_margins_in_points(tmp_path: Path) -> None:
    """72 points are an inch: margins of 31, 67, 13 and 49 points (EDGE added) on a 4 x 2
    inch figure are those fractions of 288 and 144 points."""
    fig = Figure(figsize=(4, 2), dpi=100)
    fig.add_subplot()
    Margins(fig).adjust(left=31, right=67, bottom=13, top=49)
    p = fig.subplotpars
    assert (p.left, p.right, p.bottom, p.top) == pytest.approx(
        ((31 + EDGE) / 288, 1 - (67 + EDGE) / 288, (13 + EDGE) / 144, 1 - (49 + EDGE) / 144))

"""Plots people can read (issue 18 item 5): every figure a run writes has a title naming the
scenario, labelled axes with units and a legend; links.png shows the busiest links with
their mean utilisation, busiest first; links_heatmap.png names every link up to
HEATMAP_ROW_LABELS rows, and the fabric levels beyond.  The figures are caught as they are
saved (Figure.savefig) and read as matplotlib objects."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

import ibemu
from ibemu.plots import HEATMAP_ROW_LABELS, PLOT_TOP_LINKS


def _check_labelled(fig: Figure, scenario: str) -> None:
    title = fig.axes[0].get_title() or (fig._suptitle.get_text() if fig._suptitle else "")
    assert scenario in title
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            assert ax.get_ylabel()
            continue
        if ax.get_xlabel():
            assert "(ms)" in ax.get_xlabel() or "(µs)" in ax.get_xlabel()
        assert ax.get_ylabel()


def test_santos_fig1_links_png_is_readable(tmp_path: Path, saved: dict[str, Figure]) -> None:
    scn = ibemu.santos_fig1(L=5, R=1)
    scn.duration = 3 * ibemu.PS_PER_MS
    ibemu.run_virtual(scn, out_dir=tmp_path, progress=False)
    summary = ibemu.load_results(tmp_path).summary
    nlinks = len(summary["links"])
    assert nlinks == 2 * (5 + 1 + 2 + 2) > 16       # L+R hosts, root, inter, the victim's two links
    for name in ("throughput.png", "links.png", "links_heatmap.png", "latency.png"):
        _check_labelled(saved[name], scn.name)
    ax = saved["links.png"].axes[0]
    assert "busiest %d of %d links" % (PLOT_TOP_LINKS, nlinks) in ax.get_title()
    assert "fraction of link bandwidth" in ax.get_ylabel()
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(entries) == PLOT_TOP_LINKS
    names = [e.split(" (mean ")[0] for e in entries]
    means = [float(e.split(" (mean ")[1].rstrip(")")) for e in entries]
    assert means == sorted(means, reverse=True)
    assert names[0] == "root"                        # the bottleneck: every flow into one host
    assert means[0] == pytest.approx(1.0, abs=0.03)
    # the legend's order is the order of the links' utilisation in results.json
    ranked = sorted(summary["links"], key=lambda k: -summary["links"][k]["utilization"])
    assert set(names[:4]) <= set(ranked[:6])
    heat = saved["links_heatmap.png"].axes[0]
    rows = [t.get_text() for t in heat.get_yticklabels()]
    assert sorted(rows) == sorted(summary["links"])   # every link named (20 <= HEATMAP_ROW_LABELS)


def test_a_fabric_of_more_than_50_links_gets_a_heatmap_by_level(tmp_path: Path, saved: dict[str, Figure]) -> None:
    toml = tmp_path / "ft.toml"
    toml.write_text('[template]\nname = "fat_tree2"\nradix = 8\nleaves = 8\n'
                    '[scenario]\nname = "ft32"\nduration = "50us"\n'
                    '[[flow]]\nsrc = "h0"\ndst = "h31"\n[[flow]]\nsrc = "h5"\ndst = "h31"\n')
    scn = ibemu.load_scenario(str(toml))
    ibemu.run_virtual(scn, out_dir=tmp_path / "out", progress=False)
    hosts, leaves, spines = 8 * 4, 8, 4
    nlinks = 2 * (hosts + leaves * spines)
    assert nlinks == 128 > HEATMAP_ROW_LABELS
    heat = saved["links_heatmap.png"].axes[0]
    _check_labelled(saved["links_heatmap.png"], scn.name)
    assert "by fabric level" in heat.get_title()
    blocks = {t.get_text() for t in heat.get_yticklabels()}
    # up1: host->leaf, up2: leaf->spine, down2, down1: one directed link each way
    assert blocks == {"up1 (%d)" % hosts, "up2 (%d)" % (leaves * spines), "down2 (%d)" % (leaves * spines),
                      "down1 (%d)" % hosts}
    img = heat.get_images()[0].get_array()
    assert np.asarray(img).shape[0] == nlinks
    ax = saved["links.png"].axes[0]
    assert "busiest" in ax.get_title() and "of %d links" % nlinks in ax.get_title()
    assert len(ax.get_legend().get_texts()) <= PLOT_TOP_LINKS

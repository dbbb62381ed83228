"""A run is a pure function of scenario and seed: identical results.json and captures."""
import filecmp

from ibemu.run import run_virtual
from ibemu.scenario.builders import quickstart, santos_fig1


def _run(tmp_path, tag, scn):
    out = tmp_path / tag
    out.mkdir()
    run_virtual(scn, out_dir=out, pcap=out / "capture.pcap", progress=False)
    return out


def test_same_seed_identical_results_and_capture(tmp_path):
    a = _run(tmp_path, "a", santos_fig1(L=3, R=2, window=1, duration_ms=3, victim=(1, 2)))
    b = _run(tmp_path, "b", santos_fig1(L=3, R=2, window=1, duration_ms=3, victim=(1, 2)))
    assert (a / "results.json").read_bytes() == (b / "results.json").read_bytes()
    assert filecmp.cmp(a / "capture.pcap", b / "capture.pcap", shallow=False)
    assert (a / "capture.pcap").stat().st_size > 100_000


def test_onoff_depends_on_seed(tmp_path):
    def scn(seed):
        return santos_fig1(L=2, R=2, duration_ms=3, victim=None, pattern="onoff",
                           mean_on_us=100, mean_off_us=100, seed=seed)
    a = _run(tmp_path, "s1", scn(1))
    b = _run(tmp_path, "s1bis", scn(1))
    c = _run(tmp_path, "s2", scn(2))
    assert (a / "results.json").read_bytes() == (b / "results.json").read_bytes()
    assert (a / "results.json").read_bytes() != (c / "results.json").read_bytes()


def test_quickstart_shares_the_bottleneck(tmp_path):
    r = run_virtual(quickstart(duration_ms=2), progress=False)
    links = r.summary["links"]
    assert links["bottleneck"]["data_utilization"] > 0.95
    flows = r.summary["flows"]
    assert abs(flows["f1"]["normalized"] - flows["f2"]["normalized"]) < 0.06

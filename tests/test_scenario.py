"""Scenario files: the shipped scenarios, the typed objects, and one clear line per mistake."""
import dataclasses
import json
from pathlib import Path

import pytest

from ibemu.errors import UserError
from ibemu.scenario import ScenarioError, format_time, link_labels, load_scenario, parse_rate, parse_size, parse_time
from ibemu.scenario.builders import quickstart, santos_fig1
from ibemu.units import PS_PER_MS, PS_PER_NS, PS_PER_US, ib_rate

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def same(a, b):
    """Equal apart from the file a scenario came from."""
    return dataclasses.replace(a, source=None) == dataclasses.replace(b, source=None)


# ---------------------------------------------------------------- units

def test_units():
    assert ib_rate("4x_sdr") == 1_000_000_000
    assert parse_rate("4x_sdr") == 1_000_000_000
    assert parse_rate("8Gb/s") == parse_rate("1GB/s") == parse_rate(1e9) == 1_000_000_000
    assert parse_rate("100MiB/s") == 100 * 2**20
    assert parse_time("40ns") == 40 * PS_PER_NS
    assert parse_time("2.068us") == parse_time("2.068 µs") == 2_068_000
    assert parse_time("2ms") == 2 * PS_PER_MS
    assert parse_time(0) == 0
    assert format_time(100 * PS_PER_US) == "100us"
    assert parse_size("2KiB") == (2048, None)
    assert parse_size("8192 bytes") == (8192, None)
    assert parse_size("4 packets", packets=True) == (None, 4)


# ---------------------------------------------------------------- shipped scenarios

def test_quickstart_toml():
    s = load_scenario(SCENARIOS / "quickstart.toml")
    assert s.name == "quickstart" and s.duration == 2 * PS_PER_MS and s.seed == 1
    assert [(h.name, h.lid) for h in s.hcas] == [("H1", 1), ("H2", 2), ("H3", 3)]
    assert [(ln.a, ln.a_port, ln.b, ln.b_port) for ln in s.links] == [
        ("H1", 1, "S", 1), ("H2", 1, "S", 2), ("S", 3, "H3", 1)]
    assert all(ln.params.rate == 1_000_000_000 for ln in s.links)
    assert link_labels(s.links[2]) == ("bottleneck", "bottleneck.rev")
    assert link_labels(s.links[0]) == ("H1->S", "S->H1")
    sw = s.switches[0].params
    assert sw.buffer_packets == 4 and sw.buffer_bytes is None
    assert sw.forwarding_delay == 40 * PS_PER_NS and sw.cut_through and sw.bypass_limit == 4
    f1, f2 = s.flows
    assert (f1.name, f1.src, f1.dst, f1.message_size, f1.start, f1.stop) == ("f1", "H1", "H3", 2048, 0, None)
    assert f2.start == 100 * PS_PER_US and f2.pattern == "greedy" and f2.window is None
    assert s.output.bin == 100 * PS_PER_US and s.output.window == 500 * PS_PER_US
    assert s.output.plot_links == ["bottleneck"]
    assert s.source == str(SCENARIOS / "quickstart.toml")
    json.dumps(s.resolved)
    assert same(s, quickstart())


def test_santos_fig1_toml():
    s = load_scenario(SCENARIOS / "santos_fig1.toml")
    assert s.name == "santos_fig1" and s.duration == 100 * PS_PER_MS
    lids = {h.name: h.lid for h in s.hcas}
    assert lids == {"BC": 1, "BV": 2, "AV": 3, "L1": 4, "L2": 5, "L3": 6, "L4": 7, "L5": 8, "R1": 9}
    ports = {}
    for ln in s.links:
        ports[ln.a, ln.b] = (ln.a_port, ln.b_port)
    assert ports["A", "B"] == (1, 1) and ports["B", "BC"] == (2, 1) and ports["B", "BV"] == (3, 1)
    assert ports["AV", "A"] == (1, 2) and ports["R1", "A"] == (1, 3)
    assert [ports["L%d" % i, "B"][1] for i in range(1, 6)] == [4, 5, 6, 7, 8]
    assert {link_labels(ln) for ln in s.links} >= {("inter", "inter.rev"), ("root", "root.rev")}
    assert all(sw.params.buffer_packets == 4 for sw in s.switches)
    by = {f.name: f for f in s.flows}
    assert list(by) == ["local1", "local2", "local3", "local4", "local5", "remote1", "victim"]
    assert [by["local%d" % i].start for i in range(1, 6)] == [i * 100 * PS_PER_US for i in range(5)]
    assert by["remote1"].start == 500 * PS_PER_US and by["remote1"].group == "remote"
    v = by["victim"]
    assert (v.src, v.dst, v.start, v.stop, v.group) == ("AV", "BV", 40 * PS_PER_MS, 60 * PS_PER_MS, "victim")
    assert all(f.transport == "rc" and f.op == "send" and f.message_size == 2048 and f.window is None
               and f.rate is None for f in s.flows)
    assert s.output.plot_links == ["root", "inter"] and s.output.plot_groups == ["local", "remote", "victim"]
    assert s.output.window == 2 * PS_PER_MS
    assert s.resolved["template"]["L"] == 5 and json.loads(json.dumps(s.resolved)) == s.resolved
    assert same(s, santos_fig1())


def test_template_overrides_match_python():
    s = load_scenario(SCENARIOS / "santos_fig1.toml",
                      ["template.L=10", "template.R=10", "template.window=1", "template.rate_fraction=0.1",
                       'template.duration="20ms"', "scenario.seed=7"])
    p = santos_fig1(L=10, R=10, window=1, rate=0.1, duration_ms=20, seed=7)
    assert same(s, p)
    assert len(s.flows) == 21 and all(f.window == 1 and f.rate == pytest.approx(1e8) for f in s.flows)
    assert s.duration == 20 * PS_PER_MS and s.seed == 7


def test_template_rate_by_group_and_onoff():
    s = santos_fig1(L=5, R=5, rate={"local": 0.1, "remote": 0.1, "victim": 0.5},
                    pattern="onoff", mean_on_us=500, mean_off_us=500)
    rates = {f.name: f.rate for f in s.flows}
    assert rates["local3"] == rates["remote5"] == pytest.approx(1e8) and rates["victim"] == pytest.approx(5e8)
    assert s.flows[0].pattern == "onoff" and s.flows[0].mean_on == 500 * PS_PER_US
    assert s.flows[-1].pattern == "greedy"
    s = load_scenario(SCENARIOS / "santos_fig1.toml", ['defaults.switch.buffer="16KiB"', "template.victim=false"])
    assert s.switches[0].params.buffer_bytes == 16384 and all(f.name != "victim" for f in s.flows)
    assert "buffer_packets" not in s.resolved["template"]


# ---------------------------------------------------------------- mistakes: one line each

BASE = """\
[scenario]
duration = "1ms"

[[switch]]
name = "S"

[[hca]]
name = "H1"
lid = 1
[[hca]]
name = "H2"
lid = 2

[[link]]
a = "H1"
b = "S"
[[link]]
a = "S"
b = "H2"

[[flow]]
src = "H1"
dst = "H2"
"""


@pytest.fixture
def load(tmp_path, monkeypatch):
    """Write a scenario as scen.toml and load it; returns the error line (or the Scenario)."""
    monkeypatch.chdir(tmp_path)

    def run(text, overrides=()):
        Path("scen.toml").write_text(text)
        try:
            return load_scenario("scen.toml", overrides)
        except ScenarioError as e:
            assert "\n" not in str(e)
            return str(e)
    return run


def test_base_is_valid(load):
    s = load(BASE)
    assert s.flows[0].name == "flow0" and [h.lid for h in s.hcas] == [1, 2]


def test_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as e:
        load_scenario("nope.toml")
    assert str(e.value) == "nope.toml: no such file"
    assert isinstance(e.value, UserError)
    assert (e.value.file, e.value.key, e.value.reason) == ("nope.toml", None, "no such file")


MISTAKES = [
    # (kind, how to change BASE, expected line)
    ("toml syntax", lambda t: t.replace('duration = "1ms"', 'duration = "1ms"\nseed = '),
     "scen.toml: line 3: Invalid value (column 8)"),
    ("missing key", lambda t: t.replace('duration = "1ms"', 'seed = 2'),
     "scen.toml: scenario.duration: missing"),
    ("unknown key", lambda t: t + "windw = 2\n",
     "scen.toml: flow[0].windw: unknown key (did you mean 'window'?)"),
    ("unknown section", lambda t: t + "[outptu]\nbin = \"1us\"\n",
     "scen.toml: outptu: unknown key (did you mean 'output'?)"),
    ("wrong type", lambda t: t + 'window = "2"\n',
     "scen.toml: flow[0].window: expected an integer, got string '2'"),
    ("bad unit", lambda t: t.replace('"1ms"', '"1 parsec"'),
     "scen.toml: scenario.duration: cannot read time '1 parsec' (expected e.g. '40ns', '26us', '2ms', '0.1s')"),
    ("bare number time", lambda t: t.replace('"1ms"', '5'),
     "scen.toml: scenario.duration: bare number 5: add a unit, e.g. '5us' (ns, us, ms or s)"),
    ("negative", lambda t: t + 'start = "-3us"\n',
     "scen.toml: flow[0].start: must not be negative, got '-3us'"),
    ("out of range", lambda t: t + "sl = 16\n",
     "scen.toml: flow[0].sl: must be between 0 and 15, got 16"),
    ("LID out of range", lambda t: t.replace("lid = 2", "lid = 0xC000"),
     "scen.toml: hca[1].lid: must be between 1 and 49151, got 49152"),
    ("unknown node", lambda t: t.replace('dst = "H2"', 'dst = "Z"'),
     "scen.toml: flow[0].dst: unknown node 'Z' (known: S, H1, H2)"),
    ("flow to a switch", lambda t: t.replace('dst = "H2"', 'dst = "S"'),
     "scen.toml: flow[0].dst: 'S' is a switch; flows start and end at HCAs"),
    ("duplicate name", lambda t: t.replace('name = "H2"', 'name = "H1"'),
     "scen.toml: hca[1].name: duplicate name 'H1' (also hca[0])"),
    ("duplicate LID", lambda t: t.replace("lid = 2", "lid = 1"),
     "scen.toml: hca[1].lid: duplicate LID 1 (also hca[0])"),
    ("flow src == dst", lambda t: t.replace('dst = "H2"', 'dst = "H1"'),
     "scen.toml: flow[0].dst: same as src ('H1')"),
    ("bad rate name", lambda t: t.replace('b = "S"\n', 'b = "S"\nrate = "5x_sdr"\n', 1),
     "scen.toml: link[0].rate: unknown link rate '5x_sdr' (expected e.g. 4x_sdr, 1x_qdr, 12x_edr)"),
    ("onoff without means", lambda t: t + 'pattern = "onoff"\nmean_on = "1ms"\n',
     "scen.toml: flow[0].mean_off: missing (pattern 'onoff' needs mean_on and mean_off)"),
    ("ud with read", lambda t: t + 'transport = "ud"\nop = "read"\n',
     "scen.toml: flow[0].op: ud supports only send (got 'read')"),
    ("port used twice", lambda t: t.replace('b = "S"', 'b = "S:1"').replace('a = "S"', 'a = "S:1"'),
     "scen.toml: link[1].a: port S:1 is already used by link[0]"),
    ("management port", lambda t: t.replace('b = "S"', 'b = "S:0"'),
     "scen.toml: link[0].b: port 0 is the switch management port; links use ports 1 and up"),
    ("HCA with two links", lambda t: t + '[[link]]\na = "H1"\nb = "S"\n',
     "scen.toml: link[2].a: HCA 'H1' already has a link (link[0]); an HCA has one port"),
    ("node without link", lambda t: t + '[[hca]]\nname = "H3"\n',
     "scen.toml: hca[2]: HCA 'H3' has no link"),
    ("buffer smaller than a packet", lambda t: t + '[defaults.switch]\nbuffer = "1KiB"\n',
     "scen.toml: defaults.switch.buffer: 1024 bytes cannot hold one 2048-byte packet (largest HCA MTU)"),
    ("speedup below 1", lambda t: t + '[defaults.switch]\ncrossbar_speedup = 0.5\n',
     "scen.toml: defaults.switch.crossbar_speedup: must be between 1 and 64 (1: no speedup), got 0.5"),
    ("speedup not a number", lambda t: t.replace('name = "S"', 'name = "S"\ncrossbar_speedup = "2x"'),
     "scen.toml: switch[0].crossbar_speedup: expected a number, got string '2x'"),
    ("two rate limits", lambda t: t + "ipd = 1\nrate_fraction = 0.5\n",
     "scen.toml: flow[0].rate_fraction: give only one of ipd, rate, rate_fraction"),
    ("unknown template", lambda t: '[template]\nname = "fig9"\n',
     "scen.toml: template.name: unknown template 'fig9' (known: fat_tree2, kary_ntree, leaf_spine, santos_fig1, xgft)"),
    ("template parameter", lambda t: '[template]\nname = "santos_fig1"\nl = 3\n',
     "scen.toml: template.l: unknown key (did you mean 'L'?)"),
    ("template conflict", lambda t: '[template]\nname = "santos_fig1"\nduration = "5ms"\n'
                                    '[scenario]\nduration = "6ms"\n',
     "scen.toml: scenario.duration: conflicts with template.duration; set only one"),
]


@pytest.mark.parametrize("change,expected", [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_mistake(load, change, expected):
    assert load(change(BASE)) == expected


def test_override_mistakes(load):
    assert load(BASE, ["scenario.duration"]) == \
        "scen.toml: --set scenario.duration: expected key.path=value, e.g. template.L=10"
    assert load(BASE, ["flow[3].window=1"]) == "scen.toml: --set flow[3].window=1: flow has 1 entries, no [3]"
    assert load(BASE, ["scenario.duration.x=1"]) == \
        "scen.toml: --set scenario.duration.x=1: scenario.duration is a value, not a table"
    # a value an override sets is checked like any other, and the line says where it came from
    assert load(BASE, ["flow[0].window=0"]) == \
        "scen.toml: flow[0].window: must be at least 1, got 0 (from --set flow[0].window=0)"
    assert load(BASE, ["template.L=10"]) == \
        "scen.toml: template.L: this scenario has no [template] to set parameters of (from --set template.L=10)"


def test_overrides_apply(load):
    s = load(BASE, ['scenario.duration="5ms"', "flow[0].window=2", "defaults.switch.buffer=\"8 packets\"",
                    "scenario.name=run1"])
    assert s.duration == 5 * PS_PER_MS and s.flows[0].window == 2 and s.name == "run1"
    assert s.switches[0].params.buffer_packets == 8
    assert s.resolved["flow"][0]["window"] == 2 and s.resolved["scenario"]["duration"] == "5ms"


def test_python_builder_errors():
    with pytest.raises(ScenarioError) as e:
        santos_fig1(L=-1)
    assert str(e.value) == "santos_fig1(): template.L: must be between 0 and 251, got -1"

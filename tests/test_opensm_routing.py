"""opensm.conf selects the subnet manager's routing (issue 18 item 9): ``routing_engine``,
``root_guid_file`` and ``lmc`` of a complete OpenSM 3.3 opensm.conf (written by the project,
ibemu.cc.cca.opensm_options.default_conf) give the same LFTs as the equivalent ``[routing]``
table; a key of ``[routing]`` wins; OpenSM's engine list falls back in order; a bad GUID, an
unknown or unmodelled engine name is one clear line."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ibemu.build import scenario_routes
from ibemu.cc.cca.opensm import OpenSMError, parse_opensm
from ibemu.cc.cca.opensm_options import default_conf
from ibemu.cli import main
from ibemu.cli.run import opensm_note
from ibemu.scenario import ScenarioError, scenario_from_dict
from ibemu.scenario.ibnetdiscover import read_ibnetdiscover
from ibemu.scenario.ibnetdiscover_import import topology_sections
from ibemu.scenario.model import SWITCH_GUID_BASE

DATA = Path(__file__).parent / "data"


def fat_tree() -> dict:
    """Two leaves, two spines (default GUIDs: L0, L1, S0, S1 = base + 1..4), four hosts."""
    return {"scenario": {"name": "ft", "duration": "20us"},
            "switch": [{"name": "L0"}, {"name": "L1"}, {"name": "S0"}, {"name": "S1"}],
            "hca": [{"name": n} for n in ("A", "B", "C", "D")],
            "link": [{"a": "A", "b": "L0"}, {"a": "B", "b": "L0"}, {"a": "C", "b": "L1"}, {"a": "D", "b": "L1"},
                     {"a": "L0", "b": "S0"}, {"a": "L0", "b": "S1"}, {"a": "L1", "b": "S0"}, {"a": "L1", "b": "S1"}],
            "flow": [{"src": "A", "dst": "C", "pattern": "messages", "count": 1, "message_size": 256}],
            "output": {"plots": False}}


def ring4() -> dict:
    """tests/data/ibnetdiscover/ring4.txt imported with its GUIDs (r0 = 0x200000, ...)."""
    sec = topology_sections(read_ibnetdiscover(str(DATA / "ibnetdiscover" / "ring4.txt")))
    for h in sec["hca"]:                # LMC 1: ibemu aligns the base LIDs itself
        del h["lid"]
    return dict(sec, scenario={"name": "ring", "duration": "1us"}, output={"plots": False})


def with_conf(raw: dict, tmp_path: Path, conf: dict[str, str], guids: list[str] | None = None,
              routing: dict | None = None) -> dict:
    """*raw* with a complete opensm.conf in tmp_path/osm/ (and its root_guid_file roots.guid
    beside it, named relatively) in [cc.cca]; *routing* as its [routing] table."""
    raw = copy.deepcopy(raw)
    d = tmp_path / "osm"
    d.mkdir(exist_ok=True)
    if guids is not None:
        (d / "roots.guid").write_text("# roots for updn\n\n" + "\n".join(guids) + "\n")
        conf = dict(conf, root_guid_file="roots.guid")
    (d / "opensm.conf").write_text(default_conf(conf))
    raw["cc"] = {"scheme": "cca", "cca": {"opensm_file": "osm/opensm.conf"}}
    if routing is not None:
        raw["routing"] = routing
    return raw


def load(raw: dict, tmp_path: Path):
    return scenario_from_dict(raw, label=str(tmp_path / "t.toml"), source=str(tmp_path / "t.toml"))


CASES = [   # (fabric, root GUIDs in the file, the same roots by name)
    (fat_tree, ["0x%016x" % (SWITCH_GUID_BASE + 4)], ["S1"]),
    (ring4, ["0x0000000000200002"], ["r2"]),
]


@pytest.mark.parametrize("make, guids, roots", CASES, ids=["fat_tree", "ring4"])
def test_opensm_conf_routing_gives_the_routing_tables_lfts(tmp_path, make, guids, roots):
    conf = {"routing_engine": "updn", "lmc": "1", "congestion_control": "TRUE"}
    a = load(with_conf(make(), tmp_path, conf, guids), tmp_path)
    b = load(dict(make(), routing={"engine": "updn", "lmc": 1, "roots": roots}), tmp_path)
    assert (a.routing.engine, a.routing.lmc, a.routing.roots) == ("updn", 1, roots)
    assert a.routing.fallback == ["minhop"]            # OpenSM's last resort, never reached here
    assert [h.lid for h in a.hcas] == [h.lid for h in b.hcas] == [2 * (i + 1) for i in range(len(a.hcas))]
    notes: list[str] = []
    got = scenario_routes(a, notes=notes)
    assert got == scenario_routes(b) and not notes
    plain = load(make(), tmp_path)                      # minhop, LMC 0: a different routing
    assert got != scenario_routes(plain)
    note = opensm_note(a)
    assert note is not None and "\n" not in note
    assert "routing: engine updn then minhop, lmc 1, roots %s (root_guid_file %s)" % (
        ", ".join(roots), tmp_path / "osm" / "roots.guid") in note


def test_routing_table_keys_win_over_opensm_conf(tmp_path):
    conf = {"routing_engine": "lash", "lmc": "1"}       # lash: not modelled, but overridden
    raw = with_conf(fat_tree(), tmp_path, conf, ["0x%016x" % (SWITCH_GUID_BASE + 3)],
                    routing={"engine": "minhop", "lmc": 0})
    scn = load(raw, tmp_path)
    assert (scn.routing.engine, scn.routing.lmc, scn.routing.roots, scn.routing.fallback) == ("minhop", 0, [], [])
    assert scn.routing.opensm == ["[routing] engine 'minhop' overrides routing_engine lash",
                                  "[routing] lmc 0 overrides lmc 1",
                                  "root_guid_file %s unused (engine minhop takes no roots)"
                                  % (tmp_path / "osm" / "roots.guid")]
    assert scenario_routes(scn) == scenario_routes(load(fat_tree(), tmp_path))
    # [routing] roots win over root_guid_file; the engine still comes from the file
    raw = with_conf(fat_tree(), tmp_path, {"routing_engine": "updn"}, ["0x%016x" % (SWITCH_GUID_BASE + 3)],
                    routing={"roots": ["S1"]})
    scn = load(raw, tmp_path)
    assert (scn.routing.engine, scn.routing.roots) == ("updn", ["S1"])


def test_default_conf_routes_as_opensm_default(tmp_path):
    """routing_engine (null), lmc 0: minhop, as without an opensm.conf."""
    scn = load(with_conf(fat_tree(), tmp_path, {}), tmp_path)
    assert (scn.routing.engine, scn.routing.lmc, scn.routing.fallback) == ("minhop", 0, [])
    assert scenario_routes(scn) == scenario_routes(load(fat_tree(), tmp_path))


def test_engine_list_falls_back_in_order(tmp_path):
    """ftree refuses LMC > 0 (as OpenSM's ftree does), so "ftree,updn" routes with updn."""
    raw = with_conf(fat_tree(), tmp_path, {"routing_engine": "ftree,updn,no_fallback", "lmc": "1"})
    scn = load(raw, tmp_path)
    assert (scn.routing.engine, scn.routing.fallback) == ("ftree", ["updn"])
    notes: list[str] = []
    got = scenario_routes(scn, notes=notes)
    assert got == scenario_routes(load(dict(fat_tree(), routing={"engine": "updn", "lmc": 1}), tmp_path))
    assert len(notes) == 1 and notes[0].startswith("routing: ftree failed (routing: ftree supports LMC 0 only")
    assert notes[0].endswith("; trying updn (opensm.conf routing_engine)")
    # no_fallback and ftree alone: the failure is the error
    scn = load(with_conf(fat_tree(), tmp_path, {"routing_engine": "ftree,no_fallback", "lmc": "1"}), tmp_path)
    with pytest.raises(Exception, match="ftree supports LMC 0 only"):
        scenario_routes(scn)


@pytest.mark.parametrize("line, reason", [
    ("0x0002c900000000ff", "GUID 0x0002c900000000ff is no node of this scenario (switch GUIDs: L0 0x0002c90000000001"),
    ("0x%016x" % 0x0002C90100000010, "is HCA A's; roots are switches"),
    ("S1", "'S1' is not a GUID (one GUID a line"),
    ("0x%016x\n0x%016x" % ((SWITCH_GUID_BASE + 4,) * 2), "switch S1 (GUID 0x0002c90000000004) is listed twice"),
])
def test_bad_root_guid_is_one_clear_line(tmp_path, line, reason):
    raw = with_conf(fat_tree(), tmp_path, {"routing_engine": "updn"}, [line])
    with pytest.raises(ScenarioError) as e:
        load(raw, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and reason in msg
    n = 3 + line.count("\n")                            # two header lines before the GUIDs
    assert msg.startswith("%s: cc.cca.opensm_file (%s): root_guid_file %s:%d: "
                          % (tmp_path / "t.toml", tmp_path / "osm" / "opensm.conf",
                             tmp_path / "osm" / "roots.guid", n))


@pytest.mark.parametrize("value, reason", [
    ("updm", "unknown routing engine 'updm' (did you mean 'updn'?)"),
    ("ftree,minhpo", "unknown routing engine 'minhpo' (did you mean 'minhop'?)"),
    ("torus2qos", "unknown routing engine 'torus2qos' (did you mean 'torus-2QoS'?)"),
    ("bogus", "unknown routing engine 'bogus' (OpenSM 3.3.23's engines: minhop, updn,"),
])
def test_unknown_engine_names_the_closest(tmp_path, value, reason):
    text = default_conf({"routing_engine": value})
    line = 1 + text.splitlines().index("routing_engine " + value)
    with pytest.raises(OpenSMError) as e:
        parse_opensm(text)
    assert str(e.value).startswith("line %d: routing_engine: %s" % (line, reason))
    with pytest.raises(ScenarioError) as se:
        load(with_conf(fat_tree(), tmp_path, {"routing_engine": value}), tmp_path)
    assert reason in str(se.value) and "\n" not in str(se.value)


def test_unmodelled_engine_and_bad_lmc_are_errors(tmp_path):
    with pytest.raises(ScenarioError) as e:
        load(with_conf(fat_tree(), tmp_path, {"routing_engine": "dfsssp,minhop"}), tmp_path)
    assert "routing_engine dfsssp,minhop: 'dfsssp' is an OpenSM engine ibemu does not model" in str(e.value)
    assert "set [routing] engine, which wins" in str(e.value)
    with pytest.raises(OpenSMError, match="lmc: must be between 0 and 7, got 8"):
        parse_opensm(default_conf({"lmc": "8"}))
    with pytest.raises(ScenarioError, match="the file engine needs lfts_file"):
        load(with_conf(fat_tree(), tmp_path, {"routing_engine": "file"}), tmp_path)


def _toml(raw: dict) -> str:
    """*raw* as TOML: tables of str/int/bool/list values, lists of tables inline."""
    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, str)):
            return json.dumps(v)
        if isinstance(v, dict):
            return "{" + ", ".join("%s = %s" % (k, value(x)) for k, x in v.items()) + "}"
        return "[" + ", ".join(value(x) for x in v) + "]"

    def table(name: str, d: dict) -> list[str]:
        lines = ["[%s]" % name] if name else []
        lines += ["%s = %s" % (k, value(v)) for k, v in d.items() if not isinstance(v, dict)]
        for k, v in d.items():
            if isinstance(v, dict):
                lines += table(name + "." + k if name else k, v)
        return lines
    return "\n".join(table("", raw)) + "\n"


def ring() -> dict:
    """Three switches in a ring, one host each: no switch is 'the' root (each sees the CAs'
    switches at 0, 1, 1 hops), so OpenSM's updn finds none and routes minhop."""
    return {"scenario": {"name": "ring", "duration": "20us"},
            "switch": [{"name": "R%d" % i} for i in range(3)],
            "hca": [{"name": "H%d" % i} for i in range(3)],
            "link": [{"a": "H%d" % i, "b": "R%d" % i} for i in range(3)]
            + [{"a": "R%d" % i, "b": "R%d" % ((i + 1) % 3)} for i in range(3)],
            "flow": [{"src": "H0", "dst": "H2", "pattern": "messages", "count": 1, "message_size": 256}],
            "output": {"plots": False}}


def _run_stderr(raw: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> list[str]:
    path = tmp_path / "t.toml"
    path.write_text(_toml(raw))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), *flags]) == 0
    return capsys.readouterr().err.splitlines()


def test_run_prints_the_routing_fallbacks(tmp_path, capsys):
    """``ibemu run`` says, one line each on stderr after its opensm.conf note, what
    ``ibemu routes`` says: an engine of the opensm.conf list that failed, and updn with
    no root found; --quiet says nothing; a routing that falls back to nothing says nothing."""
    raw = with_conf(fat_tree(), tmp_path, {"routing_engine": "ftree,updn", "lmc": "1"})
    err = [ln for ln in _run_stderr(raw, tmp_path, capsys) if ln.startswith("ibemu: ")]
    assert len(err) == 2 and err[0].startswith("ibemu: opensm.conf: routing: engine ftree then updn then minhop")
    assert err[1].startswith("ibemu: routing: ftree failed (routing: ftree supports LMC 0 only")
    assert err[1].endswith("; trying updn (opensm.conf routing_engine)")
    assert not [ln for ln in _run_stderr(raw, tmp_path, capsys, "--quiet") if ln.startswith("ibemu: ")]

    err = _run_stderr(dict(ring(), routing={"engine": "updn"}), tmp_path, capsys)
    assert [ln for ln in err if ln.startswith("ibemu: ")] == [
        "ibemu: routing: updn: no root switch found, falling back to minhop (as OpenSM does)"]
    for routing in ({"engine": "updn"}, {"engine": "minhop"}):      # fat tree: updn finds the spines
        err = _run_stderr(dict(fat_tree(), routing=routing), tmp_path, capsys)
        assert not [ln for ln in err if ln.startswith("ibemu: ")], routing
    assert not [ln for ln in _run_stderr(ring(), tmp_path, capsys) if ln.startswith("ibemu: ")]

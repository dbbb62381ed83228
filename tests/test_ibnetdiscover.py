"""ibnetdiscover import/export (issue 15 Deliver 3): the parser on the samples made with the
real tools (tests/data/ibnetdiscover, tools/opensm_reference.py), the round trip, the
one-line errors, and ``ibemu topology import|export``.

Expected values come from the ibsim net files the samples were made from (the fabrics'
design: node names, ports, w=/s=/e= rate options), ibsim's GUID rule (node GUIDs count up
in file order from 0x200000 for switches and 0x100000 for CAs, two per CA; a CA's port
GUID is its node GUID + port) and ``ibnetdiscover -p`` (an independent listing of LIDs and
widths/speeds from the same fabric), never from ibemu's own output.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ibemu.cli import main
from ibemu.scenario import load_scenario
from ibemu.scenario.ibnetdiscover import parse_ibnetdiscover, rate_name, read_ibnetdiscover
from ibemu.scenario.ibnetdiscover_export import write_ibnetdiscover
from ibemu.scenario.ibnetdiscover_import import sanitise_name, scenario_toml, topology_sections
from ibemu.scenario.read import scenario_from_dict
from ibemu.units import ib_rate
from ibemu.validate import ScenarioError

DATA = Path(__file__).parent / "data" / "ibnetdiscover"
SAMPLES = ("fattree2", "kary2n3", "ring4")


def _net(name: str) -> tuple[dict[str, tuple[str, int]], dict[frozenset[tuple[str, int]], str]]:
    """The ibsim net file: {node: (kind, ports)} and {frozenset of two (node, port) ends: rate name}."""
    nodes: dict[str, tuple[str, int]] = {}
    links: dict[frozenset[tuple[str, int]], str] = {}
    cur = ""
    for line in (DATA / (name + ".net")).read_text().splitlines():
        m = re.match(r'(Switch|Hca)\s+(\d+)\s+"([^"]+)"', line)
        if m:
            cur = m[3]
            nodes[cur] = (m[1], int(m[2]))
            continue
        m = re.match(r'\[(\d+)\]\s+"([^"]+)"\[(\d+)\]\s*(.*)', line)
        if m:
            opts = dict(kv.split("=") for kv in m[4].split())
            width = {"1": "1x", "2": "4x"}[opts["w"]]
            speed = {"1": "edr" if opts.get("e") == "2" else "sdr", "2": "ddr", "4": "qdr"}[opts["s"]]
            if opts.get("e") == "2":
                speed = "edr"
            links[frozenset({(cur, int(m[1])), (m[2], int(m[3]))})] = "%s_%s" % (width, speed)
    return nodes, links


def _ports_report(name: str) -> tuple[dict[int, int], dict[tuple[int, int], str]]:
    """``ibnetdiscover -p``: {CA port GUID: LID} and {(port GUID, port): "4x_qdr"}."""
    lids: dict[int, int] = {}
    rates: dict[tuple[int, int], str] = {}
    for line in (DATA / (name + ".ports.txt")).read_text().splitlines():
        m = re.match(r"(SW|CA)\s+(\d+)\s+(\d+)\s+0x([0-9a-f]+)\s+(\d+x)\s+(\w+)\s+-", line)
        if m:
            if m[1] == "CA":
                lids[int(m[4], 16)] = int(m[2])
            rates[int(m[4], 16), int(m[3])] = "%s_%s" % (m[5], m[6].lower())
    return lids, rates


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_match_the_fabric_they_were_made_from(name):
    nodes, links = _net(name)
    topo = read_ibnetdiscover(str(DATA / (name + ".txt")))
    sec = topology_sections(topo)
    sw = {e["name"]: e for e in sec["switch"]}
    hca = {e["name"]: e for e in sec["hca"]}
    assert set(sw) == {n for n, (k, _) in nodes.items() if k == "Switch"}
    assert set(hca) == {n for n, (k, _) in nodes.items() if k == "Hca"}
    for n, e in sw.items():
        assert e["ports"] == nodes[n][1] and e["desc"] == n
    # ibsim's GUIDs: file order, switches from 0x200000, CAs from 0x100000 in steps of 2
    sw_order = [n for n, (k, _) in nodes.items() if k == "Switch"]
    ca_order = [n for n, (k, _) in nodes.items() if k == "Hca"]
    for i, n in enumerate(sw_order):
        assert int(sw[n]["guid"], 16) == 0x200000 + i
    for i, n in enumerate(ca_order):
        assert int(hca[n]["guid"], 16) == 0x100000 + 2 * i
    # links: each once, with the ports and rates of the net file
    got = {frozenset({tuple(e["a"].split(":")), tuple(e["b"].split(":"))}): e["rate"] for e in sec["link"]}
    want = {frozenset({(a, str(p)) for a, p in k}): r for k, r in links.items()}
    assert got == want
    assert len(sec["link"]) == len(links)
    # LIDs and rates as ibnetdiscover -p lists them
    lids, rates = _ports_report(name)
    for n, e in hca.items():
        assert e["lid"] == lids[int(e["guid"], 16) + 1]
    for e in sec["link"]:
        node, port = e["a"].split(":")
        pg = int(sw[node]["guid"], 16) if node in sw else int(hca[node]["guid"], 16) + 1
        assert rates[pg, int(port)] == e["rate"]
    assert len({e["lid"] for e in sec["hca"]}) == len(hca)


def test_sample_structure_counts():
    ft = topology_sections(read_ibnetdiscover(str(DATA / "fattree2.txt")))
    assert (len(ft["switch"]), len(ft["hca"]), len(ft["link"])) == (6, 12, 4 * 3 + 4 * 2)
    assert sum(e["rate"] == "1x_qdr" for e in ft["link"]) == 1           # h5's link
    assert sum(e["rate"] == "4x_edr" for e in ft["link"]) == 8           # leaf-spine
    kt = topology_sections(read_ibnetdiscover(str(DATA / "kary2n3.txt")))
    # k-ary n-tree k=2 n=3: k^n hosts, n k^(n-1) switches, n k^n links
    assert (len(kt["switch"]), len(kt["hca"]), len(kt["link"])) == (12, 8, 24)
    ring = read_ibnetdiscover(str(DATA / "ring4.txt"))
    assert sorted(len(n.ports) for n in ring.switches()) == [3, 3, 3, 3]


@pytest.mark.parametrize("variant", ["g", "f", "export.rediscovered"])
def test_grouped_full_and_rediscovered_outputs_read_the_same(variant):
    """-g (chassis grouping) and -f (s= w= v= fields) of the same fabric, and the ibemu
    export loaded by ibsim and rediscovered by the real ibnetdiscover."""
    base = "fattree2.export" if variant == "export.rediscovered" else "fattree2"
    ref = topology_sections(read_ibnetdiscover(str(DATA / (base + ".txt"))))
    assert topology_sections(read_ibnetdiscover(str(DATA / ("fattree2.%s.txt" % variant)))) == ref


def test_guid_names_and_default_rates():
    topo = read_ibnetdiscover(str(DATA / "ring4.txt"))
    sec = topology_sections(topo, names="guid", rate_from="default")
    assert {e["name"] for e in sec["switch"]} == {"S-%016x" % (0x200000 + i) for i in range(4)}
    assert all("rate" not in e for e in sec["link"])


def test_rates_and_names():
    assert rate_name("4xQDR") == "4x_qdr" and rate_name("12xEDR") == "12x_edr" and rate_name("2xNDR") == "2x_ndr"
    assert ib_rate(rate_name("4xFDR10")) == round(4 * 10.3125e9 * 64 / 66 / 8)
    assert ib_rate("4x_ndr") == 4 * 100 * 10**9 // 8 and ib_rate("1x_xdr") == 200 * 10**9 // 8
    assert sanitise_name("node01 HCA-1", "x") == "node01_HCA-1"
    assert sanitise_name('..a//b..c "', "x") == "a_b.c"
    assert sanitise_name("***", "hca") == "hca"


def _round_trip(raw_topology: dict) -> None:
    scn = scenario_from_dict({"scenario": {"duration": "1ms"}, **raw_topology})
    text = write_ibnetdiscover(scn)
    sec = topology_sections(parse_ibnetdiscover(text, "x"))
    back = scenario_from_dict({"scenario": {"duration": "1ms"}, **sec})
    from ibemu.scenario.model import node_guids

    def shape(s):
        g = node_guids(s)
        return ({(h.name, h.lid, g[h.name]) for h in s.hcas}, {(w.name, g[w.name]) for w in s.switches},
                {frozenset({(ln.a, ln.a_port), (ln.b, ln.b_port)}) for ln in s.links},
                sorted(ln.params.rate for ln in s.links))
    assert shape(back) == shape(scn)


def test_round_trip_of_a_sample_and_of_a_scenario_without_guids():
    _round_trip(topology_sections(read_ibnetdiscover(str(DATA / "kary2n3.txt"))))
    # no GUIDs, descriptions or ports given: the defaults (node_guids) and assigned ports
    _round_trip({"switch": [{"name": "A"}, {"name": "B"}],
                 "hca": [{"name": "x"}, {"name": "y", "lid": 7}, {"name": "z"}],
                 "link": [{"a": "A", "b": "B", "rate": "4x_qdr"}, {"a": "x", "b": "A"}, {"a": "y", "b": "B"},
                          {"a": "z", "b": "B:9", "rate": "12x_edr"}]})


GOOD = '''#
# Topology file: made-up example (REFERENCE-FABRICS 1)
#

vendid=0x2c9
switchguid=0xaa000000000001(aa000000000001)
Switch\t36 "S-00aa000000000001"\t\t# "swA" base port 0 lid 1 lmc 0
[1]\t"H-00bb000000000010"[1](bb000000000011) \t\t# "h1 HCA-1" lid 3 4xEDR
[35]\t"S-00aa000000000002"[35]\t\t# "swB" lid 2 4xEDR

switchguid=0xaa000000000002(aa000000000002)
Switch\t36 "S-00aa000000000002"\t\t# "swB" base port 0 lid 2 lmc 0
[1]\t"H-00bb000000000020"[1](bb000000000021) \t\t# "h2 HCA-1" lid 4 4xEDR
[35]\t"S-00aa000000000001"[35]\t\t# "swA" lid 1 4xEDR

caguid=0xbb000000000010
Ca\t1 "H-00bb000000000010"\t\t# "h1 HCA-1"
[1](bb000000000011) \t"S-00aa000000000001"[1]\t\t# lid 3 lmc 0 "swA" lid 1 4xEDR

caguid=0xbb000000000020
Ca\t1 "H-00bb000000000020"\t\t# "h2 HCA-1"
[1](bb000000000021) \t"S-00aa000000000002"[1]\t\t# lid 4 lmc 0 "swB" lid 2 4xEDR
'''


def test_reference_example_parses():
    sec = topology_sections(parse_ibnetdiscover(GOOD, "ex.txt"))
    assert [e["name"] for e in sec["switch"]] == ["swA", "swB"]
    assert [(e["name"], e["lid"], e["guid"]) for e in sec["hca"]] == [
        ("h1_HCA-1", 3, "0x00bb000000000010"), ("h2_HCA-1", 4, "0x00bb000000000020")]
    assert {(e["a"], e["b"], e["rate"]) for e in sec["link"]} == {
        ("swA:1", "h1_HCA-1:1", "4x_edr"), ("swA:35", "swB:35", "4x_edr"), ("swB:1", "h2_HCA-1:1", "4x_edr")}


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


BAD = [
    # (replace this, with this, the line the error names (its text), words in the reason)
    ('[35]\t"S-00aa000000000002"[35]', '[35]\t"S-00aa000000000002[35]', '"S-00aa000000000002[35]', "quote"),
    ('[35]\t"S-00aa000000000002"[35]', '[40]\t"S-00aa000000000002"[35]', "[40]", "bad port 40"),
    ('[35]\t"S-00aa000000000002"[35]', '[x]\t"S-00aa000000000002"[35]', "[x]", "cannot read port line"),
    ('"h1 HCA-1" lid 3 4xEDR', '"h1 HCA-1" lid 3 3xEDR', "3xEDR", "unknown link width '3x'"),
    ('"h1 HCA-1" lid 3 4xEDR', '"h1 HCA-1" lid 3 4xEDQ', "4xEDQ", "unknown link speed 'EDQ'"),
    # two ends that disagree: the error names the later line (and the message both)
    ('"h1 HCA-1" lid 3 4xEDR', '"h1 HCA-1" lid 3 4xQDR', '# lid 3 lmc 0 "swA" lid 1 4xEDR', "disagree on the rate"),
    ('[35]\t"S-00aa000000000001"[35]', '[35]\t"S-00aa000000000001"[34]', '"S-00aa000000000001"[34]', "disagree"),
    ("caguid=0xbb000000000020", "caguid=0xaa000000000001", 'Ca\t1 "H-00bb000000000020"', "duplicate GUID"),
    ("caguid=0xbb000000000020", "caguid=0xbb00000000002g", "caguid=0xbb00000000002g", "cannot read"),
    ('[1]\t"H-00bb000000000020"[1](bb000000000021) \t\t# "h2 HCA-1" lid 4 4xEDR\n', '',
     '# lid 4 lmc 0 "swB"', "one end only"),
    ("vendid=0x2c9", "vendid 0x2c9", "vendid 0x2c9", "cannot read"),
    ('Ca\t1 "H-00bb000000000020"', 'Rt\t1 "H-00bb000000000020"', 'Rt\t1', "router"),
    ('# lid 4 lmc 0 "swB" lid 2 4xEDR', '# lid 4 lmc 0 "swB" 4xEDR', '"swB" 4xEDR', "cannot read"),
]


@pytest.mark.parametrize("old,new,where,reason", BAD)
def test_malformed_lines_are_one_line_errors(old, new, where, reason):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    with pytest.raises(ScenarioError) as ei:
        parse_ibnetdiscover(text, "bad.txt")
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg.startswith("bad.txt:%d: " % _line_of(text, where)), msg
    assert reason in msg, msg


def test_duplicate_hca_lid_and_missing_lid():
    text = GOOD.replace('# lid 4 lmc 0 "swB"', '# lid 3 lmc 0 "swB"').replace('"h2 HCA-1" lid 4', '"h2 HCA-1" lid 3')
    with pytest.raises(ScenarioError, match=r"^bad.txt:%d: duplicate LID 3" % _line_of(text, '# lid 3 lmc 0 "swB"')):
        topology_sections(parse_ibnetdiscover(text, "bad.txt"))
    # a CA without a LID (0: not yet assigned) gets the lowest LID no node has: the switches
    # have 1 and 2, h1 has 3 -> 4; a second one -> 5
    text = GOOD.replace('# lid 4 lmc 0 "swB"', '# lid 0 lmc 0 "swB"')
    sec = topology_sections(parse_ibnetdiscover(text, "x"))
    assert [e["lid"] for e in sec["hca"]] == [3, 4]
    text = text.replace('# lid 3 lmc 0 "swA"', '# lid 0 lmc 0 "swA"')
    sec = topology_sections(parse_ibnetdiscover(text, "x"))
    assert [e["lid"] for e in sec["hca"]] == [3, 4]
    text = text.replace('base port 0 lid 1 lmc 0', 'base port 0 lid 7 lmc 0')
    sec = topology_sections(parse_ibnetdiscover(text, "x"))
    assert sorted(e["lid"] for e in sec["hca"]) == [1, 3]


def test_names_are_made_unique():
    text = GOOD.replace('"h2 HCA-1"', '"h1 HCA-1"')
    sec = topology_sections(parse_ibnetdiscover(text, "x"))
    assert [e["name"] for e in sec["hca"]] == ["h1_HCA-1", "h1_HCA-1_2"]


def test_cli_import_writes_a_scenario_that_runs(tmp_path, capsys):
    out = tmp_path / "ft.toml"
    assert main(["topology", "import", str(DATA / "fattree2.txt"), "-o", str(out), "--duration", "100us"]) == 0
    text = out.read_text()
    assert "[[flow]]" in text and text.count("[[switch]]") == 6 and text.count("[[hca]]") == 12
    scn = load_scenario(out)
    assert len(scn.links) == 20 and scn.duration == 100 * 10**6
    out.write_text(text + '\n[[flow]]\nsrc = "h0"\ndst = "h11"\n')
    assert main(["run", str(out), "--no-plots", "--out", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "results.json").exists()
    # and back out: the export reads to the same topology.  ibemu keeps a link's rate in
    # bytes/s only, so 1x QDR comes back as 4x SDR (both 8 Gb/s of data): compare bytes/s.
    exp = tmp_path / "ft.ibnet"
    assert main(["topology", "export", str(out), "-o", str(exp)]) == 0

    def by_rate(sec):
        for e in sec["link"]:
            e["rate"] = ib_rate(e["rate"])
        return sec
    assert by_rate(topology_sections(read_ibnetdiscover(str(exp)))) == by_rate(topology_sections(
        read_ibnetdiscover(str(DATA / "fattree2.txt"))))


def test_cli_import_error_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text(GOOD.replace("[35]\t\"S-00aa000000000002\"[35]", "[99]\t\"S-00aa000000000002\"[35]"))
    assert main(["topology", "import", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("ibemu: %s:9: bad port 99" % bad)


def test_scenario_toml_is_valid_toml_with_awkward_descriptions():
    desc = 'h1 \\ HCA-1 \u00e9'                 # a backslash and a non-ASCII letter
    text = GOOD.replace('"h1 HCA-1"', '"%s"' % desc)
    toml_text = scenario_toml(parse_ibnetdiscover(text, "x"), name="imp")
    import tomllib
    raw = tomllib.loads(toml_text)
    assert raw["hca"][0]["desc"] == desc and raw["scenario"]["name"] == "imp"
    assert raw["hca"][0]["name"] == "h1_HCA-1"


@pytest.mark.parametrize("value,reason", [("0xZZ", "cannot read GUID"), ("0x" + "1" * 17, "cannot read GUID"),
                                          (0, "not zero"), (True, "expected an integer")])
def test_scenario_guid_key_is_checked(value, reason):
    raw = {"scenario": {"duration": "1ms"}, "hca": [{"name": "a", "guid": value}, {"name": "b"}],
           "link": [{"a": "a", "b": "b"}]}
    with pytest.raises(ScenarioError, match=r"^<scenario>: hca\[0\]\.guid: .*%s" % reason):
        scenario_from_dict(raw)


def test_scenario_guid_and_desc_keys():
    raw = {"scenario": {"duration": "1ms"}, "switch": [{"name": "s", "guid": "0xFFFF000000000001", "desc": "sw 1"}],
           "hca": [{"name": "a", "guid": 5}, {"name": "b"}], "link": [{"a": "a", "b": "s"}, {"a": "b", "b": "s"}]}
    scn = scenario_from_dict(raw)
    assert (scn.switches[0].guid, scn.switches[0].desc) == (0xFFFF000000000001, "sw 1")
    assert (scn.hcas[0].guid, scn.hcas[0].desc, scn.hcas[1].guid) == (5, None, None)
    raw["switch"][0]["desc"] = "x" * 65              # NodeDescription: 64 bytes
    with pytest.raises(ScenarioError, match=r"switch\[0\]\.desc: .*64 bytes"):
        scenario_from_dict(raw)

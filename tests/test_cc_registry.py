"""The scheme registry and the hooks (issue 12 item 2): the shipped schemes go through
the registry; a new scheme plugs in with register() alone -- a schema, an install that
attaches a Marker and a SourceResponse through the nodes' own operations -- and runs on
the fabric; no scheme replaces a method or adds an attribute to a node or a QP."""
from __future__ import annotations

from typing import Any

import pytest

from ibemu import cc
from ibemu.build import build_fabric
from ibemu.cc.registry import CCSpec, InstallContext, Scheme
from ibemu.fabric.network import Fabric
from ibemu.fabric.qp import SenderBase
from ibemu.fabric.switch import Switch
from ibemu.fabric.xport import Entry
from ibemu.resources import scenario_names, scenario_source
from ibemu.run import run_virtual
from ibemu.scenario import ScenarioError, load_scenario, scenario_from_dict
from ibemu.scenario.builders import QUICKSTART
from ibemu.validate import Checker, integer, table
from ibemu.wire.fields import get_fecn, set_fecn


def test_the_shipped_schemes_are_registered_in_order():
    assert [s.name for s in cc.schemes()] == ["none", "hp", "cca", "dcms"]
    assert cc.scheme("dcms").extends == "cca" and cc.scheme("dcms").node_class is not None


def _raw(cc_table: dict[str, Any]) -> dict[str, Any]:
    import copy
    raw = copy.deepcopy(QUICKSTART)
    raw["cc"] = cc_table
    return raw


def test_unknown_scheme_lists_the_registered_ones():
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(_raw({"scheme": "tcp"}), label="t.toml")
    assert str(e.value) == "t.toml: cc.scheme: unknown value 'tcp' (expected 'none' or 'hp' or 'cca')"


def test_an_add_on_needs_its_base_scheme():
    raw = _raw({"scheme": "hp", "dcms": {"manager": "H1", "tau": "1ms"}})
    with pytest.raises(ScenarioError, match='cc.dcms: the DCMS manager tunes the IBA CCA'):
        scenario_from_dict(raw, label="t.toml")


class MarkAll:
    """A toy Marker: FECN on every data packet that leaves a switch."""

    def __init__(self) -> None:
        self.marked = 0

    def on_arrival(self, sw: Switch, e: Entry, now: int) -> None:
        pass

    def on_transmit(self, sw: Switch, e: Entry, now: int) -> None:
        if e.data and not get_fecn(e.frame):
            set_fecn(e.frame)
            self.marked += 1

    def on_departure(self, sw: Switch, e: Entry, now: int) -> None:
        pass


class HalveOnBECN:
    """A toy SourceResponse: every BECN doubles the gap (up to a cap), nothing else."""

    def __init__(self, cap: int) -> None:
        self.factor = 1
        self.cap = cap
        self.becns = 0

    def gap(self, qp: SenderBase, nbytes: int, t: int) -> int:
        return t * self.factor

    def on_sent(self, qp: SenderBase, now: int, frame: bytearray) -> None:
        pass

    def on_ack(self, qp: SenderBase, now: int, psn: int, n: int, becn: int) -> None:
        if becn:
            self.becns += 1
            self.factor = min(self.factor * 2, self.cap)

    def on_cnp(self, qp: SenderBase, now: int) -> None:
        pass


@pytest.fixture
def toy_scheme():
    made: dict[str, Any] = {}

    def parse(ctx: Checker, raw: Any, path: str, nodes: dict[str, str]) -> int:
        raw = table(ctx, path, raw, ("cap",))
        return integer(ctx, path + ".cap", raw.get("cap", 4), 1, 64)

    def install(fabric: Fabric, cap: int, ctx: InstallContext) -> None:
        made["marker"] = MarkAll()
        made["responses"] = []
        for node in fabric.nodes.values():
            if isinstance(node, Switch):
                node.attach_marker(made["marker"])
        for snd, _ in fabric.qps.values():
            r = HalveOnBECN(cap)
            made["responses"].append(r)
            snd.attach_response(r)

    cc.register(Scheme("toy", "mark everything, back off on BECN", install, parse=parse))
    try:
        yield made
    finally:
        cc.unregister("toy")


def test_a_new_scheme_plugs_in_through_the_registry(toy_scheme):
    scn = scenario_from_dict(_raw({"scheme": "toy", "toy": {"cap": 8}}), label="t.toml")
    assert isinstance(scn.cc, CCSpec) and scn.cc.settings == {"toy": 8}
    base = run_virtual(scenario_from_dict(_raw({}), label="t.toml"))
    r = run_virtual(scn)
    assert toy_scheme["marker"].marked > 0                       # its marker ran at the switch
    assert all(x.becns > 0 and x.factor == 8 for x in toy_scheme["responses"])   # ... and its responses
    sent = sum(f["tx_packets"] for f in r.summary["flows"].values())
    sent_base = sum(f["tx_packets"] for f in base.summary["flows"].values())
    assert sent < sent_base / 2                                  # 8 x the gap: far fewer packets


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        cc.register(cc.scheme("hp"))


@pytest.mark.parametrize("name", [n for n in scenario_names()])
def test_no_scheme_replaces_a_method_or_adds_an_attribute(name):
    """Nodes and queue pairs keep their classes' methods and only the fields their
    classes declare: every instance attribute after install is one the class's own
    __init__ sets (checked against a fabric built without congestion control)."""
    scn = load_scenario(scenario_source(name))
    fab = build_fabric(scn)
    plain = build_fabric(load_scenario_without_cc(scn))
    for node_name, node in fab.nodes.items():
        objs = [(node, plain.nodes[node_name])]
        for flow, (snd, rcv) in fab.qps.items():
            if snd.hca is node:
                objs += [(snd, plain.qps[flow][0]), (rcv, plain.qps[flow][1])]
        for obj, ref in objs:
            for k in vars(obj):
                assert not callable(getattr(type(obj), k, None)), "%s.%s replaced" % (type(obj).__name__, k)
                if type(obj) is type(ref):
                    assert k in vars(ref), "%s: undeclared attribute %r" % (type(obj).__name__, k)


def load_scenario_without_cc(scn: Any) -> Any:
    import dataclasses
    return dataclasses.replace(scn, cc=None)

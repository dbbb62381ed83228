"""The scenario reference matches the validators (issue 30 Deliver 3).

The reference (docs/reference/scenario.md on the site) is generated from
:data:`ibemu.scenario.keyref.KEYS`.  This test records which keys the validators accept:
every call of :func:`ibemu.validate.table` (the one function that refuses an unknown key)
is recorded with its key path and its allowed keys while the shipped scenarios and a
corpus that opens every table are validated; the templates' parameters come from their
own checks (``SANTOS_FIG1_DEFAULTS`` and :mod:`ibemu.scenario.topologies`'s ``_known``).
A key accepted but missing from the reference fails, and so does a reference key that no
validator accepts (or that the corpus never reaches: then extend the corpus).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import ibemu.validate as validate
from ibemu.errors import UserError
from ibemu.scenario import topologies
from ibemu.scenario.keyref import KEYS
from ibemu.scenario.read import load_scenario, scenario_from_dict
from ibemu.scenario.templates import SANTOS_FIG1_DEFAULTS, TEMPLATES, expand_template

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = {k.path for k in KEYS}
# a table whose keys the user chooses: its children are one "<...>" entry in the reference
MAPS = {p.rsplit(".<", 1)[0]: p for p in REFERENCE if p.endswith(">") and ".<" in p}

VLARB = {"high": [[1, 10]], "low": [[0, 255]], "limit_of_high_priority": 255}
SIZES = [{"dist": "exponential", "mean": 2048, "min": 256, "max": 8192},
         {"dist": "uniform", "min": 256, "max": 4096},
         {"dist": "choice", "values": [256, 4096], "weights": [1, 3]}]
FABRIC = {
    "scenario": {"name": "corpus", "duration": "1ms", "seed": 3},
    "defaults": {"link": {"rate": "4x_sdr", "propagation": "0ns", "fc_period": "20us", "flow_control": "wire"},
                 "switch": {"buffer": "4 packets", "bypass_limit": 4, "forwarding_delay": "40ns",
                            "mode": "cut-through", "crossbar_speedup": 1, "data_vls": 2, "sl2vl": [0, 1] * 8, "vlarb": VLARB,
                            "enforce_pkeys": False, "pkeys": [0xFFFF]},
                 "hca": {"mtu": 2048, "buffer": 8192, "ack_every": 1, "data_vls": 2, "vlarb": VLARB,
                         "ack_timeout": "100us", "retry_cnt": 7, "max_outstanding": 64, "pkeys": [0xFFFF]}},
    "switch": [{"name": "S1", "ports": 8, "guid": 17, "desc": "S1", "lft": {"2": 2, "h3": 3},
                "port_buffers": {"1": 8192}, "port_pkeys": {"1": [0xFFFF]}, "port_vlarb": {"2": VLARB}, "vlarb": VLARB,
                "mode": "store-and-forward", "crossbar_speedup": 2.5, "adaptive": True, "adaptive_policy": "credits",
                "adaptive_groups": {"h3": [3], "4": [4]}}],
    "hca": [{"name": "h1", "lid": 1, "guid": 1, "desc": "h1", "mtu": 2048, "vlarb": VLARB},
            {"name": "h2", "lid": 2}, {"name": "h3", "lid": 3}, {"name": "h4", "lid": 4}],
    "link": [{"a": "h1", "b": "S1:1", "name": "up1", "levels": ["up1", "down1"], "rate": "4x_sdr"},
             {"a": "h2", "b": "S1:2"}, {"a": "h3", "b": "S1:3"}, {"a": "h4", "b": "S1:4"}],
    "flow": [{"name": "f%d" % i, "src": "h1", "dst": "h2", "transport": "rc", "op": "send", "pattern": "messages",
              "count": 2, "message_size": size, "start": "0ns", "stop": "1ms", "window": 4, "sl": 1, "group": "g",
              "pkey": 0xFFFF, "path": 0} for i, size in enumerate(SIZES)]
    + [{"src": "h2", "dst": "h3", "pattern": "onoff", "mean_on": "10us", "mean_off": "10us", "ipd": 1},
       {"src": "h3", "dst": "h1", "pattern": "poisson", "mean_interarrival": "10us", "rate": "100MB/s"},
       {"src": "h4", "dst": "h1", "pattern": "poisson", "load": 0.5, "rate_fraction": 0.5},
       {"src": "h4", "dst": "h2", "pattern": "greedy"}],
    "traffic": [{"pattern": "hotspot", "hosts": ["h1", "h2", "h3", "h4"], "exclude": [], "group": "hot", "seed": 1,
                 "max_flows": 100, "destination": "h1", "fraction": 0.25, "arrival": "messages", "count": 1,
                 "message_size": SIZES[0],
                 "background": {"pattern": "shift", "k": 1, "group": "bg", "arrival": "messages", "count": 1,
                                "message_size": SIZES[1]}},
                {"pattern": "uniform", "flows_per_host": 1, "hosts": ["h1", "h2"], "arrival": "onoff",
                 "mean_on": "5us", "mean_off": "5us", "message_size": SIZES[2]},
                {"pattern": "incast", "hosts": ["h1", "h2", "h3", "h4"], "destination": 0, "senders": 1,
                 "background": {"pattern": "uniform", "flows_per_host": 1, "message_size": SIZES[2]}},
                {"pattern": "incast", "hosts": ["h1", "h2", "h3", "h4"], "destination": 0, "senders": 1,
                 "group": "incast2", "background": {"pattern": "uniform", "group": "bg2", "message_size": SIZES[0]}}],
    "output": {"bin": "100us", "window": "200us", "plots": False, "plot_links": ["up1"], "plot_groups": ["g"],
               "snaplen": 96},
    "routing": {"engine": "minhop", "lmc": 0, "check_credit_loops": True, "adaptive": False,
                "adaptive_policy": "credits", "reorder_window": 0},
    "faults": {"loss": 0.0, "duplicate": 0.0, "reorder": 0.0, "reorder_depth": 2, "corrupt": 0.0, "down": [],
               "link": {"up1": {"loss": 0.0, "duplicate": 0.0, "reorder": 0.0, "reorder_depth": 2,
                                "corrupt": 0.0, "down": [["0.5ms", "0.6ms"]]}}},
}
SW_CC = {"Threshold": 15, "Marking_Rate": 0, "Packet_Size": 0, "Victim_Mask": [2], "Control_Map": 0x1F}
SL_CC = {"CCTI_Timer": 150, "CCTI_Increase": 1, "Trigger_Threshold": 0, "CCTI_Min": 0}
CA_CC = {"Port_Control": "qp", "CCTI_Limit": 0, "CCT": [[0, 0], [1, 1]], **SL_CC}
CC = [
    {"scheme": "cca", "cca": {"opensm": "congestion_control TRUE\n", "enabled": True, "trace_marks": True,
                              **SW_CC, **CA_CC, "sl": {"1": SL_CC},
                              "switch": {"S1": {**SW_CC, "port": {"2": {"Threshold": 15, "Marking_Rate": 0,
                                                                        "Packet_Size": 0}}}},
                              "hca": {"h1": {**CA_CC, "sl": {"0": SL_CC}}}},
     "dcms": {"manager": "h4", "tau": "100us", "T_C": 0.18, "T_W": 0.6, "T_D": 0.03, "T_I": 12, "low": 0,
              "default": 128}},
    {"scheme": "cca", "cca": {"opensm_file": "cca_opensm.conf"}},
    {"scheme": "hp", "hp": {"marking": "input-output", "output_threshold": 2, "full": "credits",
                            "propagating": False, "root_needs_credits": False, "mark_blocked_for_noncompliant": False,
                            "noncompliant_switches": [], "response": "fimd", "m": 2.0, "rates": "discrete",
                            "levels": 256, "cwnd_init": 1, "cwnd_max": 2, "unreliable_initial_ipd": 0,
                            "persistent": False, "rpi_mtu": 2048, "rpi_rate": "1GB/s", "noncompliant_cas": ["h3"],
                            "manager": "h4", "manager_period": "1ms", "trace": True, "rwl": True,
                            "rpi_reset": False}},
]
ROUTING = {"engine": "file", "roots": ["S1"], "lft_file": "none.dump"}
OPS = [{"type": "allreduce", "algorithm": "ring", "size": "4KiB", "iterations": 2, "compute": "1us"},
       {"type": "broadcast", "root": 1, "size": 64}, {"type": "halo", "dims": 2, "size": 64},
       {"type": "halo", "grid": [2, 2], "size": 64},
       {"type": "p2p", "messages": [[0, 1], [1, 0, 128]], "size": 64}]
JOBS = [[{"name": "a", "hosts": ["h1", "h2", "h3", "h4"], "op": "write", "sl": 1, "start": "1us", "shared": True,
          "max_messages": 1000, "ops": OPS},
         {"name": "b", "hosts": {"first": 2}, "shared": True, "ops": [{"type": "barrier"}]},
         {"name": "c", "hosts": {"range": [0, 2]}, "shared": True, "ops": [{"type": "alltoall", "size": 64}]},
         {"name": "d", "hosts": {"every": 2, "offset": 1, "count": 2}, "shared": True,
          "ops": [{"type": "allgather", "size": 64}]},
         {"name": "e", "hosts": {"random": 2, "seed": 3}, "shared": True,
          "ops": [{"type": "reduce_scatter", "size": 64}]}],
        [{"name": "t", "hosts": {"first": 2}, "trace": "no-such-trace.otf2", "compute_scale": 0.5,
          "algorithm": {"allreduce": "ring", "allgather": "ring", "reduce_scatter": "ring", "alltoall": "pairwise",
                        "broadcast": "binomial", "barrier": "dissemination"}}]]


def _norm(path: str) -> str:
    """A recorded key path as the reference writes it: [] for indices, <...> for map keys."""
    path = re.sub(r"\[\d+\]", "[]", path)
    for prefix in sorted(MAPS, key=len):
        if path.startswith(prefix + "."):
            rest = path[len(prefix) + 1:].split(".", 1)
            path = MAPS[prefix] + ("." + rest[1] if len(rest) > 1 else "")
    return path


@pytest.fixture(scope="module")
def accepted() -> set[str]:
    """Every key path a validator's table() call allowed while the corpus was read."""
    calls: list[tuple[str, object]] = []
    real = validate.table

    def recording(ctx, path, v, allowed, required=()):
        calls.append((path, allowed))
        return real(ctx, path, v, allowed, required)

    patched = [m for name, m in list(sys.modules.items())
               if name.startswith("ibemu") and getattr(m, "table", None) is real]
    for m in patched:
        m.table = recording
    try:
        for path in sorted((ROOT / "scenarios").glob("*.toml")):
            load_scenario(path)
        sources = [dict(FABRIC, cc=cc) for cc in CC] + [dict(FABRIC, routing=ROUTING)]
        sources += [dict(FABRIC, flow=[], traffic=[], job=jobs) for jobs in JOBS]
        for raw in sources:
            try:
                scenario_from_dict(raw, label="corpus", source=str(ROOT / "scenarios" / "corpus.toml"))
            except UserError:
                pass                   # a later check refused it: the tables before were recorded
    finally:
        for m in patched:
            m.table = real
    keys = set()
    for path, allowed in calls:
        base = _norm(path)
        if base in MAPS:
            keys.add(MAPS[base])
        elif not isinstance(allowed, validate.AnyKeys):
            keys |= {_norm(validate.join(path, k)) for k in allowed}
    keys |= {"template", "template.name"} | {"template(santos_fig1).%s" % k for k in SANTOS_FIG1_DEFAULTS}
    real_known = topologies._known
    for name in TEMPLATES:
        if name == "santos_fig1":
            continue
        seen: list[tuple[str, ...]] = []
        topologies._known = lambda params, allowed, required=(), seen=seen: seen.append(tuple(allowed))
        try:
            expand_template(name, {})
        except (ValueError, KeyError, UserError):
            pass
        finally:
            topologies._known = real_known
        assert seen, "template %s: its parameters were not checked" % name
        keys |= {"template(%s).%s" % (name, k) for k in seen[0]}
    return keys


def test_every_accepted_key_is_in_the_reference(accepted):
    missing = sorted(accepted - REFERENCE)
    assert not missing, "accepted by the validators, missing from ibemu/scenario/keyref.py: %s" % missing


def test_every_reference_key_is_accepted(accepted):
    extra = sorted(REFERENCE - accepted)
    assert not extra, "in ibemu/scenario/keyref.py but accepted by no validator (or not in the corpus): %s" % extra


def test_the_check_can_fail():
    """A key path the reference lacks is reported; so is an index or a map key normalised."""
    assert _norm("switch[3].port_buffers.7") == "switch[].port_buffers.<port>"
    assert _norm("cc.cca.hca.h1.sl.3.CCTI_Min") == "cc.cca.hca.<hca>.sl.<SL>.CCTI_Min"
    assert "flow[].no_such_key" not in REFERENCE

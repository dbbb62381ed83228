"""Nodes on several hosts (issue 4 item 6): ``ibemu node`` runs part of a scenario given
an address map.  Two network namespaces joined by a veth pair stand for two machines;
the test needs root and ``ip netns`` and skips, saying why, without them."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = """
[scenario]
name = "two_hosts"
duration = "2ms"
[[switch]]
name = "S"
[[hca]]
name = "H1"
[[hca]]
name = "H2"
[[link]]
a = "H1"
b = "S"
[[link]]
a = "S"
b = "H2"
[[flow]]
name = "f1"
src = "H1"
dst = "H2"
pattern = "messages"
count = 100
[[flow]]
name = "f2"
src = "H2"
dst = "H1"
pattern = "messages"
count = 60
[output]
plots = false
"""


def sh(*cmd, check=True):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r


@pytest.fixture
def two_namespaces():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if not shutil.which("ip"):
        pytest.skip("the ip command (iproute2) is not installed")
    tag = "%d" % (os.getpid() % 100000)
    a, b = "ibemu_a%s" % tag, "ibemu_b%s" % tag
    va, vb = "ibv%sa" % tag, "ibv%sb" % tag
    try:
        sh("ip", "netns", "add", a)
    except RuntimeError as e:
        pytest.skip("cannot create a network namespace here: %s" % e)
    try:
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb)
        sh("ip", "link", "set", va, "netns", a)
        sh("ip", "link", "set", vb, "netns", b)
        for ns, dev, addr in ((a, va, "10.199.0.1/24"), (b, vb, "10.199.0.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
    except RuntimeError as e:
        for ns in (a, b):
            sh("ip", "netns", "del", ns, check=False)
        pytest.skip("cannot join two namespaces with a veth pair here: %s" % e)
    yield a, b
    for ns in (a, b):
        sh("ip", "netns", "del", ns, check=False)


def test_nodes_in_two_namespaces_complete_their_flows(two_namespaces, tmp_path):
    ns_a, ns_b = two_namespaces
    scn = tmp_path / "two_hosts.toml"
    scn.write_text(SCENARIO)
    amap = tmp_path / "map.toml"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ibemu = [sys.executable, "-m", "ibemu", "node", str(scn)]
    r = subprocess.run(ibemu + ["--make-map", str(amap), "--place", "S,H1=10.199.0.1",
                                "--place", "H2=10.199.0.2"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "10.199.0.2:" in amap.read_text()
    start = "%.3f" % (time.time() + 4)
    procs = []
    for ns, nodes in ((ns_a, "S,H1"), (ns_b, "H2")):
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", ns] + ibemu + ["--map", str(amap), "--nodes", nodes,
                                                   "--start-at", start, "--dilation", "200",
                                                   "--out", str(tmp_path / ns)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=60))
        finally:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    assert "flow f2: 60 packets, 60 messages received at H1" in outs[0][0]
    assert "flow f1: 100 packets, 100 messages received at H2" in outs[1][0]
    for ns in (ns_a, ns_b):
        part = json.loads(next((tmp_path / ns).glob("node-*.json")).read_text())
        assert part["completed"] and part["runtime"]["datagrams_lost"] == 0
        assert part["runtime"]["datagrams_received"] > 100


def test_node_processes_on_loopback_complete_their_flows(tmp_path):
    """The same without namespaces (runs anywhere): two ``ibemu node`` processes on
    127.0.0.1, one map, one start instant."""
    scn = tmp_path / "two_hosts.toml"
    scn.write_text(SCENARIO)
    amap = tmp_path / "map.toml"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ibemu = [sys.executable, "-m", "ibemu", "node", str(scn)]
    r = subprocess.run(ibemu + ["--make-map", str(amap), "--port-base", "19700"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    start = "%.3f" % (time.time() + 3)
    procs = [subprocess.Popen(ibemu + ["--map", str(amap), "--nodes", nodes, "--start-at", start,
                                       "--out", str(tmp_path / "out")],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for nodes in ("S,H1", "H2")]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=60))
        finally:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    assert "flow f2: 60 packets, 60 messages received at H1" in outs[0][0]
    assert "flow f1: 100 packets, 100 messages received at H2" in outs[1][0]
    assert " 0 lost; completed" in outs[0][0] and " 0 lost; completed" in outs[1][0]
    assert len(list((tmp_path / "out").glob("node-*.json"))) == 2

"""ibemu against ns-3 on the same 128-host fat tree, side by side in one run: packet-hops
per second of each and the ratio (issue 28 Deliver 3).

    python benchmarks/bench_ns3.py                     # 2 ms emulated, best of 2 each
    python benchmarks/bench_ns3.py --repeat 3 --tree   # this tree through python -m ibemu

ns-3: the anchor in ../shared/anchors/ns3 (``--ns3-dir``; its README.md has the model),
built by its ``build.sh`` into ``--ns3-bin`` (default /tmp/ns3anchor, build.sh's own
default) when the ``fattree`` binary is missing or older than its sources, then run as
``fattree --simMs=2``: 16 leaves x 8 hosts, 8 spines, every link 8 Gb/s with 0 delay,
2048-byte UDP payloads at line rate under a random derangement, 4-packet DropTail
queues, per-packet random ECMP.  Its packet-hops are PhyTxEnd events on every device, and
its wall time covers ``Simulator::Run()`` only.  Without ns-3 (``pkg-config`` finds no
``ns3-core``: ``apt-get install -y libns3-dev g++ pkg-config``) or without the anchor or
its binary, the script prints one line saying why and exits 0: a skip.

ibemu: the same fabric as far as ibemu's model allows -- template ``fat_tree2`` radix 16
(16 leaves x 8 hosts, 8 spines), every link 4x SDR (8 Gb/s signalling, 1 GB/s of data
after 8b/10b: ns-3's 8 Gb/s carries about 1 GB/s as well), 0 propagation, 2048-byte
payloads (the default MTU and message size), switch and HCA buffers of 4 packets, greedy
RC flows under a ``[[traffic]]`` random permutation (a derangement, seed 1; not ns-3's
draw, which its mt19937 shuffle makes), ftree routing (deterministic, where ns-3 sprays
per packet), credit flow control (lossless, where ns-3 drops at the tail).  It runs as a
user runs it: ``ibemu run <scenario> --out DIR`` of the current tree installed with
its compiled core (the venv that ``bench_whole.py`` keeps under ``--venvs``), or with
``--tree`` as ``python -m ibemu`` with PYTHONPATH = this tree.

ibemu's packet-hops are the data and ACK packets that crossed a link: the sum of
PortXmitPkts over every port in results.json, which counts no link flow-control packet
(IBA 16.1.3.5; ibemu/fabric/counters.py), so there is nothing to subtract; the ns-3 model
has no link packets.  Two ibemu rates are printed: over the whole process's wall time
(interpreter start, reading, building, routing, the run, writing the outputs), and over
the run phase of its summary line (the event loop alone) -- the latter is the one to
compare with ns-3's, which times ``Simulator::Run()`` alone.  The runs alternate (ns-3,
ibemu, then ibemu, ns-3, ...); the best of ``--repeat`` counts for each.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_whole import DEFAULT_VENVS, BenchError, current_venv, parse_summary, timed_run, venv_core

HERE = Path(__file__).resolve().parent.parent
NS3_DIR = HERE.parent / "shared" / "anchors" / "ns3"
NS3_BIN = Path("/tmp/ns3anchor")
HOSTS_PER_LEAF = 8
SCENARIO = """\
# benchmarks/bench_ns3.py: ns-3's 128-host fat tree as ibemu models it
[template]
name = "fat_tree2"
radix = 16                # 16 leaves x 8 hosts, 8 spines

[scenario]
name = "ns3_fattree128"
duration = "{ms}ms"
seed = 1

[defaults.link]
rate = "4x_sdr"           # 8 Gb/s, 1 GB/s of data
propagation = "0ns"

[defaults.switch]
buffer = "4 packets"       # an HCA's receive buffer: 4 max-size packets by default

[routing]
engine = "ftree"

[[traffic]]
pattern = "permutation"   # greedy RC SEND flows, 2048-byte messages
"""


class Skip(Exception):
    """ns-3 cannot run here: the reason, one line."""


# ---------------------------------------------------------------- ns-3

def ns3_binary(anchor: Path, bindir: Path) -> tuple[Path, str]:
    """The anchor's ``fattree`` binary (built when missing or stale) and ns-3's version."""
    if not (anchor / "fattree.cc").exists() or not (anchor / "build.sh").exists():
        raise Skip("no ns-3 anchor at %s (fattree.cc and build.sh)" % anchor)
    if shutil.which("pkg-config") is None:
        raise Skip("pkg-config is not installed (apt-get install -y libns3-dev g++ pkg-config)")
    v = subprocess.run(["pkg-config", "--modversion", "ns3-core"], capture_output=True, text=True)
    if v.returncode:
        raise Skip("ns-3 is not installed: pkg-config knows no ns3-core (apt-get install -y libns3-dev g++ "
                   "pkg-config)")
    binary = bindir / "fattree"
    sources = [anchor / n for n in ("fattree.cc", "bench-common.h")]
    if not binary.exists() or binary.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        if shutil.which("g++") is None:
            raise Skip("%s is missing and g++ is not installed to build it (apt-get install -y g++)" % binary)
        print("ns-3: building the anchor into %s (build.sh) ..." % bindir, flush=True)
        r = subprocess.run(["sh", str(anchor / "build.sh")], env=dict(os.environ, OUT=str(bindir)),
                           capture_output=True, text=True)
        if r.returncode or not binary.exists():
            last = ((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1]
            raise Skip("building the ns-3 anchor failed (exit %d): %s" % (r.returncode, last))
    return binary, v.stdout.strip()


def ns3_run(binary: Path, ms: float, scratch: Path, tag: str) -> dict[str, Any]:
    r = timed_run([str(binary), "--simMs=%g" % ms], scratch, scratch / ("ns3-%s.log" % tag))
    result: dict[str, Any] = {"wall": r["wall"], "cpu": r["cpu"]}
    for line in r["text"].splitlines():
        if line.startswith(("RESULT ", "INFO ")):
            for word in line.split()[1:]:
                key, _, value = word.partition("=")
                result[key] = value
    if "packet_hops" not in result:
        raise BenchError("ns-3's fattree printed no RESULT line (output: %s)" % (scratch / ("ns3-%s.log" % tag)))
    result["hops"] = int(result["packet_hops"])
    result["run"] = float(result["wall_s"])
    return result


# ---------------------------------------------------------------- ibemu

def ibemu_run(cmd: list[str], env: dict[str, str] | None, scenario: Path, scratch: Path,
              tag: str, plots: bool) -> dict[str, Any]:
    out = scratch / ("out-" + tag)
    shutil.rmtree(out, ignore_errors=True)
    args = [*cmd, "run", str(scenario), "--out", str(out)] + ([] if plots else ["--no-plots"])
    r = timed_run(args, scratch, scratch / ("ibemu-%s.log" % tag), env)
    r.update(parse_summary(r.pop("text")))
    try:
        results = json.loads((out / "results.json").read_text())
        ports = results["ports"]
        links = results["summary"]["links"]
        with open(out / "flow_table.csv", newline="") as fh:
            flows = list(csv.DictReader(fh))
    except (OSError, ValueError, KeyError) as e:
        raise BenchError("cannot read the run's outputs in %s: %s" % (out, e)) from e
    r["hops"] = sum(int(p["PortXmitPkts"]) for p in ports.values())
    r["ports"] = len(ports)
    r["data_hops"] = sum(int(ln.get("data_packets", 0)) for ln in links.values())
    leaf = lambda host: int(host.lstrip("h")) // HOSTS_PER_LEAF      # noqa: E731  h<i> is on leaf i div 8
    r["same_leaf_flows"] = sum(leaf(f["src"]) == leaf(f["dst"]) for f in flows)
    r["flows"] = len(flows)
    r["share"] = sum(float(f["normalized"] or 0) for f in flows) / max(len(flows), 1)
    r["run"] = r["phases"].get("run", r["ibemu_wall"])
    shutil.rmtree(out, ignore_errors=True)
    return r


# ---------------------------------------------------------------- report

def report(ns3: dict[str, Any], ib: dict[str, Any], version: str, core: str, ms: float, repeat: int) -> None:
    print("\n128-host fat tree (16 leaves x 8 hosts, 8 spines), random permutation of greedy flows, %g ms, "
          "best of %d each" % (ms, repeat))
    print("  ns-3 %s: %d packet-hops (PhyTxEnd), %s events, %s tail drops, %s of %d flows within a leaf" % (
        version, ns3["hops"], ns3.get("events", "?"), ns3.get("taildrops", "?"), ns3.get("same_leaf_flows", "?"),
        int(ns3.get("hosts", 128))))
    print("  ibemu (%s core): %d packet-hops (sum of PortXmitPkts over %d ports: %d data packets, %d ACKs), "
          "%d events, %d of %d flows within a leaf, mean flow throughput %.1f %% of its link" % (
              core, ib["hops"], ib["ports"], ib["data_hops"], ib["hops"] - ib["data_hops"], ib["events"],
              ib["same_leaf_flows"], ib["flows"], 100 * ib["share"]))
    ns_run, ns_whole = ns3["hops"] / ns3["run"], ns3["hops"] / ns3["wall"]
    ib_run, ib_whole = ib["hops"] / ib["run"], ib["hops"] / ib["wall"]
    print("  %-44s %9s %13s" % ("(best of each)", "wall s", "packet-hops/s"))
    print("  %-44s %9.2f %13.0f" % ("ns-3, Simulator::Run() only", ns3["run"], ns_run))
    print("  %-44s %9.2f %13.0f" % ("ns-3, whole process (setup included)", ns3["wall"], ns_whole))
    print("  %-44s %9.2f %13.0f" % ("ibemu, run phase only (the event loop)", ib["run"], ib_run))
    print("  %-44s %9.2f %13.0f" % ("ibemu, whole process", ib["wall"], ib_whole))
    phases = ", ".join("%s %.2f s" % kv for kv in ib["phases"].items())
    print("  ibemu's phases: %s" % (phases or "none printed"))
    print("  ibemu, data packets only (no ACKs; ns-3's UDP has none) over the run phase: %.0f packet-hops/s" % (
        ib["data_hops"] / ib["run"]))
    print("  CPU seconds of the whole process (user + system): ns-3 %.2f, ibemu %.2f" % (ns3["cpu"], ib["cpu"]))
    print("  ratio ibemu / ns-3, run phase over Simulator::Run() (the comparable pair): %.2fx" % (ib_run / ns_run))
    print("  ratio ibemu / ns-3, whole process over whole process:                 %.2fx" % (ib_whole / ns_whole))
    print("  ratio ibemu / ns-3, ibemu's whole process over Simulator::Run():      %.2fx" % (ib_whole / ns_run))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ms", type=float, default=2.0, help="emulated / simulated ms (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each, the best counts (default %(default)s)")
    ap.add_argument("--ns3-dir", type=Path, default=NS3_DIR, help="the ns-3 anchor's sources (%(default)s)")
    ap.add_argument("--ns3-bin", type=Path, default=NS3_BIN, help="where build.sh puts its binaries (%(default)s)")
    ap.add_argument("--venvs", type=Path, default=DEFAULT_VENVS,
                    help="bench_whole.py's venvs: the current tree installed with its compiled core (%(default)s)")
    ap.add_argument("--tree", action="store_true",
                    help="run python -m ibemu with PYTHONPATH = this tree instead of the installed venv")
    ap.add_argument("--no-plots", action="store_true", help="pass --no-plots to ibemu run")
    a = ap.parse_args(argv)
    if a.repeat < 1 or a.ms <= 0:
        ap.error("--repeat at least 1 and --ms above 0")
    try:
        binary, version = ns3_binary(a.ns3_dir, a.ns3_bin)
    except Skip as e:
        print("bench_ns3.py: skipped: %s" % e)
        return 0
    try:
        if a.tree:
            cmd = [sys.executable, "-m", "ibemu"]
            env: dict[str, str] | None = dict(os.environ, PYTHONPATH=str(HERE))
            env.pop("IBEMU_PURE", None)
            version_line = subprocess.run([*cmd, "--version"], env=env, capture_output=True, text=True).stdout
            core = version_line.partition("(")[2].rpartition(" core)")[0] or "unknown"     # "ibemu 0.1.0 (X core)"
        else:
            a.venvs.expanduser().mkdir(parents=True, exist_ok=True)
            folder = current_venv(a.venvs.expanduser().resolve(), HERE)
            cmd, env, core = [str(folder / "venv" / "bin" / "ibemu")], None, venv_core(folder)
        print("bench_ns3: ns-3 %s (%s); ibemu %s (%s core); %d CPUs, load average %.2f %.2f %.2f" % (
            version, binary, cmd[0], core, os.cpu_count() or 0, *os.getloadavg()), flush=True)
        with tempfile.TemporaryDirectory(prefix="ibemu-ns3-") as tmp:
            scratch = Path(tmp)
            scenario = scratch / "ns3_fattree128.toml"
            scenario.write_text(SCENARIO.format(ms="%g" % a.ms))
            ns3_runs, ib_runs = [], []
            for i in range(a.repeat):
                for which in (("ns3", "ibemu") if i % 2 == 0 else ("ibemu", "ns3")):
                    if which == "ns3":
                        r = ns3_run(binary, a.ms, scratch, str(i))
                        ns3_runs.append(r)
                        rate = r["hops"] / r["run"]
                    else:
                        r = ibemu_run(cmd, env, scenario, scratch, str(i), not a.no_plots)
                        ib_runs.append(r)
                        rate = r["hops"] / r["run"]
                    print("  run %d/%d %-5s %7.2f s wall (process), %7.2f s run, %9.0f packet-hops/s over the run,"
                          " load %.2f" % (i + 1, a.repeat, which, r["wall"], r["run"], rate, os.getloadavg()[0]),
                          flush=True)
            best_ns3 = min(ns3_runs, key=lambda r: r["run"])
            best_ib = min(ib_runs, key=lambda r: r["run"])
            best_ib = dict(best_ib, wall=min(r["wall"] for r in ib_runs), cpu=min(r["cpu"] for r in ib_runs))
            best_ns3 = dict(best_ns3, wall=min(r["wall"] for r in ns3_runs), cpu=min(r["cpu"] for r in ns3_runs))
            report(best_ns3, best_ib, version, core, a.ms, a.repeat)
    except BenchError as e:
        print("bench_ns3.py: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("bench_ns3.py: %s: %s" % (e.filename or "I/O", e.strerror or e), file=sys.stderr)
        return 1
    print("\nload average at the end: %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())

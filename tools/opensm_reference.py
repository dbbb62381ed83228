"""Regenerate the project's reference files made with the real InfiniBand tools (issue 15):
ibnetdiscover samples (tests/data/ibnetdiscover/) and OpenSM's LFT dumps (tests/data/opensm/).

Not needed by CI: the outputs are committed.  It needs Debian's ``ibsim-utils`` (ibsim and
``libumad2sim.so``), ``opensm`` and ``infiniband-diags``.  Regenerate with::

    python tools/opensm_reference.py            # writes tests/data/ibnetdiscover and tests/data/opensm
    python tools/opensm_reference.py --out /tmp/ref --keep   # elsewhere, keeping the logs

For each fabric below it writes an ibsim net file (``<fabric>.net``: ibsim reads files
"compatible with ibnetdiscover", port options ``w=`` LinkWidthEnabled, ``s=`` LinkSpeedEnabled,
``e=`` LinkSpeedExtEnabled set on both ends of a link), starts ``ibsim -s <fabric>.net`` and,
with ``LD_PRELOAD=libumad2sim.so`` and ``SIM_HOST`` = the first HCA, runs once per routing
engine, each time with a fresh cache directory (so the LIDs are assigned afresh, in the same
order)::

    opensm -o -e -f <log> -D 0x43 --dump_files_dir <dir> -R <engine> [-l 1]

(``-o`` one sweep then exit; ``-D 0x43`` = errors, info and ROUTING, which makes it write
``opensm-lfts.dump``), then ``ibnetdiscover`` (and with ``-p`` ports, ``-g`` chassis grouping,
``-f`` full details) against the routed fabric.
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

# ibsim port options (IBA 14.2.5.6 PortInfo encodings): width 4x = 2, 1x = 1; speed SDR = 1,
# DDR = 2, QDR = 4; extended speed FDR = 1, EDR = 2.
QDR4 = "w=2 s=4"
EDR4 = "w=2 s=4 e=2"
QDR1 = "w=1 s=4"


class Net:
    """An ibsim net file under construction: nodes with their port lines."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[str, int, dict[int, str]]] = {}

    def node(self, kind: str, name: str, ports: int) -> None:
        self.nodes[name] = (kind, ports, {})

    def link(self, a: str, ap: int, b: str, bp: int, opts: str = QDR4) -> None:
        self.nodes[a][2][ap] = '"%s"[%d]\t%s' % (b, bp, opts)
        self.nodes[b][2][bp] = '"%s"[%d]\t%s' % (a, ap, opts)

    def text(self) -> str:
        out = []
        for name, (kind, ports, lines) in self.nodes.items():
            out.append('%s\t%d "%s"' % (kind, ports, name))
            out.extend("[%d]\t%s" % (p, lines[p]) for p in sorted(lines))
            out.append("")
        return "\n".join(out)


def two_level() -> Net:
    """A 2-level fat tree: 4 leaves x 3 hosts, 2 spines; hosts 4x QDR (one 1x QDR), leaf-spine
    4x EDR.  Leaf ports 1-3 hosts, 5-6 spines; spine port i+1 = leaf i."""
    n = Net()
    hosts = ["h%d" % i for i in range(12)]
    for h in hosts:
        n.node("Hca", h, 1)
    for s in range(2):
        n.node("Switch", "spine%d" % s, 8)
    for leaf in range(4):
        n.node("Switch", "leaf%d" % leaf, 8)
    for leaf in range(4):
        for j in range(3):
            h = leaf * 3 + j
            n.link("leaf%d" % leaf, 1 + j, hosts[h], 1, QDR1 if h == 5 else QDR4)
        for s in range(2):
            n.link("leaf%d" % leaf, 5 + s, "spine%d" % s, 1 + leaf, EDR4)
    return n


def kary_ntree(k: int = 2, levels: int = 3) -> Net:
    """The k-ary n-tree of Petrini & Vanneschi (REFERENCE-FABRICS §5), k=2 n=3: 8 hosts,
    12 switches of 2k ports; ports 1..k down, k+1..2k up; all links 4x QDR."""
    n = Net()
    words = list(itertools.product(range(k), repeat=levels - 1))

    def sw(w: tuple[int, ...], lvl: int) -> str:
        return "sw%d_%s" % (lvl, "".join(map(str, w)))

    hosts = ["h%d" % i for i in range(k ** levels)]
    for h in hosts:
        n.node("Hca", h, 1)
    for lvl in range(levels):
        for w in words:
            n.node("Switch", sw(w, lvl), 2 * k)
    for i, h in enumerate(hosts):               # node (p0..p_{n-1}) on leaf <p0..p_{n-2}>
        digits = [(i // k ** (levels - 1 - d)) % k for d in range(levels)]
        n.link(sw(tuple(digits[:-1]), levels - 1), 1 + digits[-1], h, 1)
    for lvl in range(levels - 1):               # <w,l> - <w',l+1> iff w_i = w'_i for i != l
        for w in words:
            for d in range(k):
                w2 = list(w)
                w2[lvl] = d
                # the upper switch's down port = digit of the lower, the lower's up port = digit of the upper
                n.link(sw(tuple(w2), lvl + 1), k + 1 + w[lvl], sw(w, lvl), 1 + w2[lvl])
    return n


def ring() -> Net:
    """4 switches in a ring, one host each: a fabric that is no tree (minhop/updn only)."""
    n = Net()
    for i in range(4):
        n.node("Hca", "h%d" % i, 1)
    for i in range(4):
        n.node("Switch", "r%d" % i, 4)
    for i in range(4):
        n.link("r%d" % i, 1, "h%d" % i, 1, QDR4 if i % 2 else "w=2 s=2")
        n.link("r%d" % i, 2, "r%d" % ((i + 1) % 4), 3)
    return n


# fabric -> (builder, engines (first: the one ibnetdiscover runs after), updn roots by name or None: auto).
# The ring has no root OpenSM's updn would find by itself ("no root nodes were found": it falls
# back to minhop), so its root is given with -a.
FABRICS = {"fattree2": (two_level, ("minhop", "updn", "ftree", "minhop-lmc1"), None),
           "kary2n3": (kary_ntree, ("minhop", "updn", "ftree"), None),
           "ring4": (ring, ("minhop", "updn"), ["r0"])}


def _env(cache: Path, sim_host: str) -> dict[str, str]:
    env = dict(os.environ, LD_PRELOAD=UMAD2SIM, SIM_HOST=sim_host,
               OSM_CACHE_DIR=str(cache), OSM_TMP_DIR=str(cache))
    return env


def run_fabric(name: str, out_disc: Path, out_osm: Path, work: Path) -> None:
    build, engines, roots = FABRICS[name]
    net = build()
    netfile = work / ("%s.net" % name)
    netfile.write_text(net.text())
    sim_host = next(n for n, (kind, _, _) in net.nodes.items() if kind == "Hca")
    log = open(work / (name + ".ibsim.log"), "w")
    sim = subprocess.Popen(["ibsim", "-s", str(netfile)], stdin=subprocess.PIPE, stdout=log,
                           stderr=subprocess.STDOUT, cwd=work, start_new_session=True)
    try:
        time.sleep(1.0)
        if sim.poll() is not None:
            raise SystemExit("ibsim exited: see %s" % (work / (name + ".ibsim.log")))
        for engine in engines:
            eng, _, lmc = engine.partition("-lmc")
            d = work / ("%s.%s" % (name, engine))
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            cmd = ["opensm", "-o", "-e", "-f", str(d / "opensm.log"), "-D", "0x43", "--dump_files_dir", str(d),
                   "-R", eng]
            if lmc:
                cmd += ["-l", lmc]
            if eng == "updn" and roots:
                text = (out_disc / ("%s.txt" % name)).read_text()
                guids = [re.search(r'switchguid=0x([0-9a-f]+)\(.*\n.*# "%s"' % r, text)[1] for r in roots]
                (d / "roots").write_text("".join("0x%s\n" % g for g in guids))
                cmd += ["-a", str(d / "roots")]
            print("+", " ".join(cmd), file=sys.stderr)
            subprocess.run(cmd, env=_env(d, sim_host), check=True, timeout=120, stdout=subprocess.DEVNULL)
            shutil.copy(d / "opensm-lfts.dump", out_osm / ("%s.%s.lfts.dump" % (name, engine)))
            if engine == engines[0]:
                for args, suffix in (([], "txt"), (["-p"], "ports.txt"), (["-g"], "g.txt"), (["-f"], "f.txt")):
                    text = subprocess.run(["ibnetdiscover", *args], env=_env(d, sim_host), check=True, timeout=60,
                                          capture_output=True, text=True).stdout
                    (out_disc / ("%s.%s" % (name, suffix))).write_text(text)
        shutil.copy(netfile, out_disc / netfile.name)
    finally:
        os.killpg(sim.pid, signal.SIGTERM)
        sim.wait(timeout=10)
        log.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs)")
    ap.add_argument("fabrics", nargs="*", default=list(FABRICS))
    a = ap.parse_args()
    out_disc, out_osm = a.out / "ibnetdiscover", a.out / "opensm"
    out_disc.mkdir(parents=True, exist_ok=True)
    out_osm.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="opensm_ref."))
    try:
        for name in a.fabrics:
            run_fabric(name, out_disc, out_osm, work)
    finally:
        if a.keep:
            print("work folder:", work, file=sys.stderr)
        else:
            shutil.rmtree(work)


if __name__ == "__main__":
    main()

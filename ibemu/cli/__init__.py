"""The ``ibemu`` command."""
from __future__ import annotations

import argparse
import atexit
import gc
import sys

from .. import __version__
from ..core import VersionAction
from ..errors import OutputError, UserError
from ..sim.hugepages import use_huge_pages
from ..validate import cli_number
from .captures import cmd_decode, cmd_sample
from .diags import cmd_ccconfig, cmd_perfquery, cmd_routes, cmd_topology
from .options import connect_timeout_option, default_limit, finite_float, memory, window
from .run import cmd_report, cmd_run
from .scenarios import cmd_examples
from .studies import cmd_reproduce, cmd_study, cmd_sweep


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ibemu", description=__doc__.strip() if __doc__ else None)
    p.add_argument("--version", action=VersionAction, version=__version__)   # and which core (issue 16)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("sample", help="write a capture holding every frame kind and print it decoded")
    s.add_argument("--pcap", default="sample.pcap", help="output capture (default sample.pcap)")
    s.set_defaults(func=cmd_sample)

    r = sub.add_parser("run", help="run a scenario and write its output folder",
                       epilog="exit status: 0 done; 1 a failed run or an output that cannot be written; "
                              "2 bad input; 4 wall clock: the run is invalid (--sync exact: a broken promise or a "
                              "lost datagram; --sync free: strayed further than the fabric's time-scale; results "
                              "written with \"valid\": false; --allow-late exits 0); 130 interrupted")
    r.add_argument("scenario", help="scenario file (TOML), e.g. scenarios/quickstart.toml, or the name "
                                    "of a shipped scenario, e.g. quickstart")
    r.add_argument("--clock", choices=["virtual", "wall"], default="virtual",
                   help="virtual: deterministic discrete-event engine (default); "
                        "wall: worker processes exchanging UDP datagrams in real time")
    r.add_argument("--out", help="output folder (default runs/<scenario name>)")
    r.add_argument("--pcap", help="write every frame to this capture (pcapng, one interface per directed link; "
                                  "name it .pcapng)")
    r.add_argument("--snaplen", type=int, metavar="N",
                   help="store only the first N bytes of each captured frame (its original length is kept); "
                        "scenario key output.snaplen")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario value, e.g. template.L=10 (repeatable)")
    r.add_argument("--seed", type=int, help="override scenario.seed")
    r.add_argument("--duration", help='override scenario.duration, e.g. "5ms"')
    fa = r.add_argument_group("link faults on every link (the scenario's [faults] table)")
    fa.add_argument("--loss", type=finite_float, metavar="P", help="probability a frame is lost, e.g. 0.05")
    fa.add_argument("--duplicate", type=finite_float, metavar="P", help="probability a frame is duplicated")
    fa.add_argument("--reorder", type=finite_float, metavar="P", help="probability a frame is held back")
    fa.add_argument("--reorder-depth", type=int, metavar="N", help="frames that may overtake it (default 3)")
    fa.add_argument("--corrupt", type=finite_float, metavar="P", help="probability one bit of a frame flips")
    r.add_argument("--max-memory", type=memory, metavar="SIZE", default=default_limit(),
                   help="the most memory the time bins may take, e.g. 8GiB, or none (default %dGiB)"
                        % (default_limit() >> 30))
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--report", action="store_true",
                   help="also write OUT/report.html, the run's self-contained HTML report (ibemu report)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    from ..runtime.commands import add_fidelity_parser, add_wall_options
    from ..runtime.node_command import add_node_parser
    add_wall_options(r)
    r.set_defaults(func=cmd_run)
    add_node_parser(sub)
    add_fidelity_parser(sub)

    rep = sub.add_parser("report", help="write a run's self-contained HTML report (tables, interactive plots)")
    rep.add_argument("run", help="output folder of a finished run (holding results.json)")
    rep.add_argument("-o", "--out", help="HTML file to write (default RUN/report.html)")
    rep.set_defaults(func=cmd_report)

    ex = sub.add_parser("examples", help="list the shipped scenarios, print one, or copy one out for editing")
    ex.add_argument("name", nargs="?", help="a shipped scenario (without it: list them)")
    ex.add_argument("--copy", metavar="DIR", help="copy the scenario (and the files it names) into DIR")
    ex.set_defaults(func=cmd_examples)

    rp = sub.add_parser("reproduce", help="reproduce the seed papers' figures and compare")
    rp.add_argument("figure", nargs="?", help="figure id (see --list) or 'all'")
    rp.add_argument("--list", action="store_true", help="list the reproductions")
    rp.add_argument("--out", help="output folder (default reproductions/)")
    rp.add_argument("--full", action="store_true",
                    help="the papers' whole sweeps (long) instead of the CI-sized ones, their runs in "
                         "parallel on a local Dask cluster (or --scheduler)")
    rp.add_argument("--scheduler", metavar="local|sync|tcp://HOST:PORT",
                    help="where a figure's runs go: local: a new local Dask cluster (default with --full); "
                         "sync: one after another here (default without); tcp://HOST:PORT: a Dask cluster")
    rp.add_argument("--workers", type=cli_number(int, "a number", lambda v: None if v >= 1 else "must be at least 1"),
                    metavar="N", help="local cluster: N worker processes (default: cores)")
    connect_timeout_option(rp)
    rp.set_defaults(func=cmd_reproduce)

    sw = sub.add_parser("sweep", help="run a scenario over a grid of values and seeds in parallel (Dask)",
                        epilog="exit status: 0 every point finished; 1 a point failed (the others ran); "
                               "2 bad input; 130 interrupted (run it again to resume)")
    sw.add_argument("scenario", help="scenario file (TOML) or a shipped scenario's name")
    sw.add_argument("--grid", action="append", metavar="KEY=V1,V2,...",
                    help="sweep a scenario key (as --set) over these values; several --grid: their product")
    sw.add_argument("--zip", action="append", metavar="KEY=V1,V2,...",
                    help="keys varied together (their i-th values in one point); one dimension of the product")
    sw.add_argument("--seeds", type=int, default=1, metavar="N",
                    help="run each point with N seeds, the scenario's seed and the N-1 after it (default 1)")
    sw.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a value in every point")
    sw.add_argument("--duration", help='override scenario.duration in every point, e.g. "5ms"')
    sw.add_argument("--out", help="the sweep's folder (default sweeps/<scenario name>); "
                                  "points finished there are not run again")
    sw.add_argument("--scheduler", default="local", metavar="local|sync|tcp://HOST:PORT",
                    help="local: a new local Dask cluster (default); sync: one point after another in this "
                         "process; tcp://HOST:PORT: an existing Dask cluster (the folder must be shared)")
    sw.add_argument("--workers", type=cli_number(int, "a number", lambda v: None if v >= 1 else "must be at least 1"),
                    metavar="N", help="local cluster: N worker processes (default: cores)")
    connect_timeout_option(sw)
    sw.add_argument("--window", type=window, metavar="FROM,TO", help="measure the metrics over FROM..TO ms")
    sw.add_argument("--metric", help="the plotted metric (default: victim, else a group's or flow's throughput)")
    sw.add_argument("--x", help="the plot's x axis: a swept key (default the first)")
    sw.add_argument("--lines", action="append", metavar="KEY", help="one line per value of KEY (default: the "
                                                                    "other swept keys)")
    sw.add_argument("--point-plots", action="store_true", help="write each point's PNG plots too")
    sw.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)

    st = sub.add_parser("study", help="run a study on your scenario file (congestion_tree: a hot spot on a fat tree "
                                      "under none, hp, cca, dcms)")
    st.add_argument("study", choices=["congestion_tree", "interference", "adaptive"])
    st.add_argument("scenario", nargs="?", help="scenario file (default the shipped scenarios/congestion_tree.toml)")
    st.add_argument("--cases", help="comma-separated subset of baseline,none,hp,cca,dcms (default all)")
    st.add_argument("--ci-size", action="store_true", help="shrink to the CI size (32 hosts, 2 ms)")
    st.add_argument("--out", help="output folder (default studies/congestion_tree)")
    st.set_defaults(func=cmd_study)

    ro = sub.add_parser("routes", help="the scenario's forwarding tables (OpenSM's engines) and their balance")
    ro.add_argument("scenario", help="scenario TOML file")
    ro.add_argument("--engine", choices=("minhop", "updn", "ftree", "file"), help="routing engine (default: [routing])")
    ro.add_argument("--lmc", type=int, choices=range(8), metavar="N", help="LMC 0..7 (default: [routing])")
    ro.add_argument("--dump", metavar="FILE", help="write the LFTs to FILE")
    ro.add_argument("--format", choices=("opensm", "ibroute"), default="opensm",
                    help="dump format: opensm-lfts.dump (default) or ibroute output")
    ro.set_defaults(func=cmd_routes)

    pq = sub.add_parser("perfquery", help="a port's counters in perfquery format, from a run's output folder")
    pq.add_argument("run", help="output folder of a finished run (holding results.json)")
    pq.add_argument("target", help="node name or LID")
    pq.add_argument("port", nargs="?", type=int, help="port number (default: the node's first port)")
    pq.add_argument("-x", "--extended", action="store_true", help="PortCountersExtended (64-bit)")
    pq.add_argument("--live", action="store_true",
                    help="ask a running wall-clock emulation (its --out folder) with a PerfMgt MAD")
    pq.add_argument("--via", help="--live: the HCA that sends the MAD (default: the lowest LID)")
    pq.set_defaults(func=cmd_perfquery)

    cc = sub.add_parser("ccconfig", help="set congestion control in a running emulation, as ibccconfig does")
    cc.add_argument("run", help="output folder of a running wall-clock emulation")
    cc.add_argument("op", help="SwitchCongestionSetting (SS), SwitchPortCongestionSetting (SP), "
                               "CACongestionSetting (CS) or CongestionControlTable (CT)")
    cc.add_argument("target", help="node name or LID")
    cc.add_argument("values", nargs="+", help="the attribute's fields in ibccconfig's order "
                                              "(SP: portnum valid control_type threshold packet_size marking_rate)")
    cc.add_argument("-c", "--cckey", type=lambda x: int(x, 0), default=0, help="CC_Key (default 0)")
    cc.add_argument("--via", help="the HCA that sends the MAD (default: the lowest LID)")
    cc.set_defaults(func=cmd_ccconfig)

    d = sub.add_parser("decode", help="print a capture one frame per line")
    d.add_argument("file")
    d.add_argument("--fecn", action="store_true", help="only FECN-marked packets")
    d.add_argument("--becn", action="store_true", help="only BECN-marked packets")
    d.add_argument("--opcode", help="only this OpCode (name such as RC_ACKNOWLEDGE, or number)")
    d.add_argument("--lid", type=int, help="only packets from or to this LID")
    d.add_argument("--no-links", action="store_true", help="hide link flow-control packets")
    d.set_defaults(func=cmd_decode)

    tp = sub.add_parser("topology", help="import ibnetdiscover output as a scenario, or export a scenario's topology")
    tsub = tp.add_subparsers(dest="op", metavar="import|export", required=True)
    ti = tsub.add_parser("import", help="ibnetdiscover text -> a scenario TOML (topology only)")
    ti.add_argument("file", help="ibnetdiscover output (infiniband-diags)")
    ti.add_argument("-o", "--out", help="scenario file to write (default: standard output)")
    ti.add_argument("--names", choices=("desc", "guid"), default="desc",
                    help="node names from node descriptions (default) or the node GUIDs (S-<guid>, H-<guid>)")
    ti.add_argument("--rate-from", choices=("file", "default"), default="file",
                    help="link rates from the file's width and speed (default) or ibemu's default rate")
    ti.add_argument("--duration", default="1ms", help="the scenario's duration (default 1ms)")
    te = tsub.add_parser("export", help="a scenario's topology -> ibnetdiscover text (ibsim loads it)")
    te.add_argument("file", help="scenario TOML file")
    te.add_argument("-o", "--out", help="file to write (default: standard output)")
    tp.set_defaults(func=cmd_topology)
    return p


def main(argv: list[str] | None = None) -> int:
    # The process ends with the command: Python's last garbage collection, over every
    # object the run left (its fabric, metrics, modules), is skipped by freezing them
    # first -- about 50 ms of a seed 003 run (issue 28).  Nothing is lost: every output
    # file is closed before the command returns.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    use_huge_pages()                    # before anything large is made (ibemu.sim.arena)
    try:
        return args.func(args)
    except OutputError as e:         # an output path: its name and the system's reason
        print("ibemu: %s" % e, file=sys.stderr)
        return 1
    except UserError as e:
        print("ibemu: %s" % e, file=sys.stderr)
        return 2
    except BrokenPipeError:          # e.g. `ibemu decode x.pcap | head`
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("ibemu: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        if e.filename is None:
            raise
        print("ibemu: %s: %s" % (e.filename, e.strerror or e), file=sys.stderr)    # any other file's error
        return 1

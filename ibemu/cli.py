"""The ``ibemu`` command."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .core import VersionAction
from .errors import OutputError, UserError
from .validate import cli_number

if TYPE_CHECKING:
    from .scenario import Scenario


def _cmd_sample(args) -> int:
    from .sample import write_sample
    from .wire.summary import summarize
    frames = write_sample(args.pcap)
    print("wrote %d frames, one of every kind, to %s" % (len(frames), args.pcap))
    for label, link, frame in frames:
        print("  %-32s %s" % (label, summarize(frame, link)))
    from .resources import lua_plugin
    print("open it with: wireshark -X lua_script:%s %s" % (lua_plugin(), args.pcap))
    return 0


def _cmd_decode(args) -> int:
    from .decode import decode, parse_opcode
    opcode = None
    if args.opcode is not None:
        try:
            opcode = parse_opcode(args.opcode)
        except ValueError as e:
            print("ibemu decode: %s" % e, file=sys.stderr)
            return 2
    decode(args.file, fecn=args.fecn, becn=args.becn, opcode=opcode, lid=args.lid,
           links=not args.no_links)
    return 0


def _scenario_source(name: str) -> str:
    """A scenario argument: a file, or a shipped scenario's name (``quickstart``)."""
    from .resources import scenario_names, scenario_source
    source = scenario_source(name)
    if source == name and not Path(source).exists() and not any(c in source for c in "/.\\"):
        raise UserError("%s: no such file, nor a shipped scenario (shipped: %s)"
                        % (source, ", ".join(scenario_names())))
    return source


def opensm_note(scn) -> str | None:
    """One line on the opensm.conf of ``[cc.cca]`` beyond congestion control (issue 18
    item 9): the routing it selected (or the ``[routing]`` keys that overrode it), and
    every other non-CC option listed once as not modelled.  None when there is none."""
    from .cc.cca.settings import CCASpec
    spec = scn.cc.get("cca", CCASpec) if scn.cc is not None else None
    if spec is None or not (spec.opensm_not_modelled or scn.routing.opensm):
        return None
    parts = []
    if scn.routing.opensm:
        parts.append("routing: " + ", ".join(scn.routing.opensm))
    if spec.opensm_not_modelled:
        parts.append("%d options not modelled: %s" % (len(spec.opensm_not_modelled),
                                                       ", ".join(spec.opensm_not_modelled)))
    return "ibemu: opensm.conf: " + "; ".join(parts)


def run_notes(scn: Scenario) -> list[str]:
    """The lines ``ibemu run`` prints on stderr before the run: :func:`opensm_note`, then
    one per routing fallback (:func:`ibemu.build.routing_notes`: an opensm.conf engine
    list's engine that failed, updn with no root found), as ``ibemu routes`` prints them."""
    from .build import routing_notes
    note = opensm_note(scn)
    lines = [note] if note else []
    for n in routing_notes(scn):
        lines.append("ibemu: " + (n if n.startswith("routing: ") else "routing: " + n))
    return lines


def _cmd_run(args) -> int:
    from .run import print_summary, run_virtual
    from .scenario import load_scenario
    source = _scenario_source(args.scenario)
    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append("scenario.seed=%d" % args.seed)
    if args.duration is not None:
        overrides.append('scenario.duration="%s"' % args.duration)
    if getattr(args, "snaplen", None) is not None:     # issue 18: checked as the scenario key
        overrides.append("output.snaplen=%d" % args.snaplen)
    for key in ("loss", "duplicate", "reorder", "reorder_depth", "corrupt"):   # issue 8: all links
        value = getattr(args, key, None)
        if value is not None:
            overrides.append("faults.%s=%s" % (key, value))
    from .results.phases import Phases
    phases = Phases(not args.quiet)
    with phases.phase("read"):
        scn = load_scenario(source, overrides, memory_limit=args.max_memory)
    if not args.quiet:
        for line in run_notes(scn):
            print(line, file=sys.stderr)
    if args.no_plots:
        scn.output.plots = False
    args.out = args.out or default_out(scn.name)   # run_virtual and run_wall check the paths first
    if args.clock == "wall":
        from .runtime.commands import cmd_run_wall
        status = cmd_run_wall(args, scn)
        if args.report and status in (0, 4):    # 4: written, but invalid (ibemu.runtime.verdict)
            _report(args.out, None, args.quiet)
        return status
    result = run_virtual(scn, out_dir=args.out, pcap=args.pcap,
                         progress=False if args.quiet else None, phases=phases)
    if not args.quiet:
        print_summary(result)
        if args.pcap:
            from .runtime.commands import capture_hint, capture_links_hint
            print(capture_hint(args.pcap))
            if scn.links:
                print(capture_links_hint(scn.links[0].labels()[0]))
    if args.report:
        _report(args.out, None, args.quiet)
    return 0


def _report(run_dir: str, path: str | None, quiet: bool = False) -> None:
    from .results.report import write_report
    written = write_report(run_dir, path)
    if not quiet:
        print("report: %s (one self-contained HTML file: open it in a browser)" % written)


def _cmd_report(args) -> int:
    """``ibemu report RUN_DIR [-o FILE]``: the run's HTML report (issue 18 item 3)."""
    _report(args.run, args.out)
    return 0


def _cmd_examples(args) -> int:
    """``ibemu examples [NAME [--copy DIR]]``: the shipped scenarios (issue 18 item 6)."""
    from .resources import copy_scenario, scenario_description, scenario_names, shipped_scenario
    if args.name is None:
        if args.copy:
            raise UserError("--copy needs a scenario name (ibemu examples NAME --copy DIR)")
        names = scenario_names()
        width = max(len(n) for n in names)
        for n in names:
            text = scenario_description(n)
            room = 100 - width - 2                  # one line of 100 each: the file has the rest
            if len(text) > room:
                text = text[:room - 4].rsplit(" ", 1)[0] + " ..."
            print("%-*s  %s" % (width, n, text))
        print("\nrun one: ibemu run NAME; copy one to edit: ibemu examples NAME --copy DIR")
        return 0
    try:
        f = shipped_scenario(args.name)
    except FileNotFoundError as e:
        raise UserError(str(e).strip("'\"")) from None
    if not args.copy:
        sys.stdout.write(f.read_text(encoding="utf-8"))
        return 0
    try:
        written = copy_scenario(args.name, args.copy)
    except FileExistsError as e:
        raise UserError("%s exists already: not overwritten" % e) from None
    except OSError as e:
        raise OutputError.from_os(e.filename or args.copy, e) from None
    for w in written:
        print("copied %s" % w)
    print("run it: ibemu run %s" % written[0])
    return 0


def default_out(name: str) -> str:
    """``runs/<name>``, the default output folder, which a name can never steer outside
    runs/ (issue 14 Deliver 5; the scenario loader already refuses such names)."""
    runs = Path("runs").resolve()
    out = (runs / name).resolve()
    if out.parent != runs:
        raise UserError("scenario name %r would put the output folder outside runs/: give --out" % name)
    return "runs/%s" % name


def _memory(text: str) -> int | None:
    """--max-memory: a size such as "8GiB", or "none" for no limit."""
    from .units import parse_bytes
    if text.strip().lower() in ("none", "unlimited"):
        return None
    try:
        n = parse_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n <= 0:
        raise argparse.ArgumentTypeError("must be positive, got %r" % text)
    return n


_finite_float = cli_number(float, "a number", lambda v: None if math.isfinite(v) else "must be a finite number")
"""A finite float (--loss, --duplicate, --reorder, --corrupt: probabilities)."""


def _cmd_reproduce(args) -> int:
    from .studies.registry import main as reproduce_main
    return reproduce_main(args.figure, out_dir=args.out, list_only=args.list, full=args.full,
                          scheduler=args.scheduler, workers=args.workers, connect_timeout=args.connect_timeout)


def _window(text: str) -> tuple[float, float]:
    """--window FROM,TO in ms."""
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError("expected FROM,TO in ms, e.g. 5,20, got %r" % text) from None
    if not (0 <= lo < hi and math.isfinite(hi)):
        raise argparse.ArgumentTypeError("expected 0 <= FROM < TO, got %r" % text)
    return lo, hi


def _connect_timeout_option(p: argparse.ArgumentParser) -> None:
    """--connect-timeout, for ``sweep`` and ``reproduce`` (issue 17: an unreachable
    --scheduler fails in seconds)."""
    from .studies.sweep import CONNECT_TIMEOUT
    p.add_argument("--connect-timeout", type=cli_number(float, "seconds", lambda v: None if 0 < v <= 3600
                                                        else "must be more than 0 and at most 3600 seconds"),
                   default=CONNECT_TIMEOUT, metavar="SECONDS",
                   help="tcp://HOST:PORT: give up reaching the scheduler after SECONDS (default %g)"
                        % CONNECT_TIMEOUT)


def _cmd_sweep(args) -> int:
    """``ibemu sweep SCENARIO --grid KEY=V1,V2 ...``: the points through Dask, the tables,
    the aggregate over seeds and a plot (ibemu/studies/sweep.py)."""
    from .scenario import load_scenario
    from .studies import sweep as S
    source = str(_scenario_source(args.scenario))
    common = list(args.set or [])
    if args.duration is not None:
        common.append('scenario.duration="%s"' % args.duration)
    if not args.grid and not args.zip and args.seeds < 2:
        raise UserError("nothing to sweep: give --grid KEY=V1,V2,..., --zip KEY=V1,V2,... or --seeds N")
    base = load_scenario(source, common)
    points = S.plan(args.grid or [], args.zip or [], seeds=args.seeds, base_seed=base.seed)
    keys = list(dict.fromkeys(k for p in points for k, _ in p.keys))
    for k in (args.x, *(args.lines or [])):
        if k is not None and k not in keys:
            raise UserError("--x/--lines %s: not a swept key (swept: %s)" % (k, ", ".join(keys) or "none"))
    out = Path(args.out or "sweeps/%s" % base.name)
    print("sweep of %s: %d points (%d seeds each) into %s/" % (base.name, len(points), args.seeds, out))
    result = S.run_sweep(source, points, out, common=common, scheduler=args.scheduler, workers=args.workers,
                         window_ms=args.window, plots=args.point_plots, progress=False if args.quiet else None,
                         connect_timeout=args.connect_timeout)
    agg = S.write_tables(result, keys, out)
    if keys and agg:
        x = args.x or keys[0]
        lines = args.lines or [k for k in keys if k != x]
        metric = args.metric
        if metric is None:
            names = [m for m in agg[0] if m not in keys and m != "n" and not m.endswith(":ci95")]
            useful = [m for m in names if not all(math.isnan(r.get(m, math.nan)) for r in agg)]
            metric = next((m for m in ("victim", *[n for n in useful if n.startswith(("group:", "flow:"))], "jain")
                           if m in useful), useful[0] if useful else None)
        if metric is not None:
            if metric not in agg[0]:
                raise UserError("--metric %s: not a metric of this sweep (%s)" % (metric, ", ".join(
                    m for m in agg[0] if m not in keys and not m.endswith(":ci95") and m != "n")))
            S.plot_sweep(agg, metric, x, lines, out / "sweep.png")
            print("plot of %s over %s: %s" % (metric, x, out / "sweep.png"))
    print("%d points: %d ran, %d reused, %d failed in %.1f s; tables %s, %s (aggregate: %s)"
          % (len(points), result.ran, result.reused, len(result.failed), result.wall_seconds,
             out / "sweep.csv", out / "sweep.parquet", out / "aggregate.csv"))
    if result.interrupted:
        print("ibemu: sweep interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    if result.failed:
        for p, err in result.failed:
            print("ibemu: failed point %s: %s" % (p.label(), err), file=sys.stderr)
        return 1
    return 0


def _cmd_study(args) -> int:
    """``ibemu study congestion_tree [SCENARIO]``: the study's cases on a scenario file
    (default the shipped congestion_tree.toml as it is), the table and the plots."""
    if args.study == "adaptive":
        from .studies.adaptive import main as adaptive
        return adaptive(args.out, not args.ci_size, args.scenario)
    if args.study == "interference":
        from .studies.interference import main as interference
        return interference(args.out, not args.ci_size, args.cases, args.scenario)
    from .studies.congestion_tree import CASES, format_table, run_study
    cases = tuple(args.cases.split(",")) if args.cases else CASES
    for c in cases:
        if c not in CASES:
            raise UserError("--cases: unknown case %r (known: %s)" % (c, ", ".join(CASES)))
    out = Path(args.out or "studies/congestion_tree")
    values = run_study(out, full=not args.ci_size, scenario=args.scenario, cases=cases)
    print(format_table(values))
    print("table (tree.md, tree.csv), tree.png and per case heatmap_<case>.png, blocked_<case>.png in %s/" % out)
    return 0


def _cmd_routes(args) -> int:
    """``ibemu routes``: the scenario's LFTs from its routing engine (or --engine/--lmc),
    written in OpenSM's or ibroute's format, and a balance table per switch level."""
    from .build import scenario_routes, subnet_of, switch_lids
    from .routing import write_ibroute, write_opensm
    from .routing.graph import balance
    from .scenario.read import load_scenario
    scn = load_scenario(_scenario_source(args.scenario))
    if args.engine:
        scn.routing.engine = args.engine
    if args.lmc is not None:
        scn.routing.lmc = args.lmc
        n = 1 << args.lmc
        for h in scn.hcas:
            if h.lid % n:
                raise UserError("%s: HCA %s's LID %d is not aligned to 2^LMC = %d" % (args.scenario, h.name, h.lid, n))
    notes: list[str] = []
    sw_lids = switch_lids(scn)
    lfts = scenario_routes(scn, sw_lids, notes)
    sn = subnet_of(scn, sw_lids)
    for note in notes:
        print(note)
    if args.dump:
        text = (write_ibroute if args.format == "ibroute" else write_opensm)(sn, lfts)
        Path(args.dump).write_text(text, encoding="utf-8")
        print("LFTs of %d switches written to %s (%s format)" % (len(lfts), args.dump, args.format))
    print("routing %s, lmc %d: CA LIDs routed per up-port" % (scn.routing.engine, scn.routing.lmc))
    print("%-6s %9s %9s %8s %5s %5s" % ("level", "switches", "up-ports", "routes", "min", "max"))
    for lvl, nsw, nports, total, lo, hi in balance(sn, lfts):
        print("%-6d %9d %9d %8d %5d %5d" % (lvl, nsw, nports, total, lo, hi))
    return 0


def _cmd_perfquery(args) -> int:
    if args.live:
        from .runtime.mgmt import live_perfquery
        print(live_perfquery(args.run, args.target, args.port, extended=args.extended, via=args.via))
        return 0
    from .perfquery import EXIT_IBERROR, PerfqueryError, from_run
    try:
        print(from_run(args.run, args.target, args.port, extended=args.extended))
    except PerfqueryError as e:         # as infiniband-diags' perfquery fails (issue 18 item 8)
        print(e.tool_line())
        print("ibemu: %s" % e, file=sys.stderr)
        return EXIT_IBERROR
    return 0


def _cmd_ccconfig(args) -> int:
    from .runtime.mgmt import live_ccconfig
    print(live_ccconfig(args.run, args.op, args.target, args.values, cc_key=args.cckey, via=args.via))
    return 0


def _write_text(path: str | None, text: str) -> None:
    """*text* to the file *path*, or to standard output when it is None or "-"."""
    if path in (None, "-"):
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise OutputError.from_os(path, e) from None


def _cmd_topology(args) -> int:
    """``ibemu topology import|export``: ibnetdiscover text <-> a scenario's topology (issue 15)."""
    from .scenario.ibnetdiscover import read_ibnetdiscover, scenario_toml, write_ibnetdiscover
    if args.op == "import":
        topo = read_ibnetdiscover(args.file)
        _write_text(args.out, scenario_toml(topo, names=args.names, rate_from=args.rate_from,
                                            duration=args.duration))
        if args.out not in (None, "-"):
            print("%d switches, %d HCAs, %d links written to %s (add [[flow]] or [[traffic]] tables)"
                  % (len(topo.switches()), sum(len(n.ports) for n in topo.cas()), len(topo.links), args.out))
        return 0
    from .scenario import load_scenario
    _write_text(args.out, write_ibnetdiscover(load_scenario(args.file)))
    return 0


def _default_limit() -> int:
    from .scenario.output import DEFAULT_MEMORY_LIMIT
    return DEFAULT_MEMORY_LIMIT


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ibemu", description=__doc__.strip() if __doc__ else None)
    p.add_argument("--version", action=VersionAction, version=__version__)   # and which core (issue 16)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("sample", help="write a capture holding every frame kind and print it decoded")
    s.add_argument("--pcap", default="sample.pcap", help="output capture (default sample.pcap)")
    s.set_defaults(func=_cmd_sample)

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
    fa.add_argument("--loss", type=_finite_float, metavar="P", help="probability a frame is lost, e.g. 0.05")
    fa.add_argument("--duplicate", type=_finite_float, metavar="P", help="probability a frame is duplicated")
    fa.add_argument("--reorder", type=_finite_float, metavar="P", help="probability a frame is held back")
    fa.add_argument("--reorder-depth", type=int, metavar="N", help="frames that may overtake it (default 3)")
    fa.add_argument("--corrupt", type=_finite_float, metavar="P", help="probability one bit of a frame flips")
    r.add_argument("--max-memory", type=_memory, metavar="SIZE", default=_default_limit(),
                   help="the most memory the time bins may take, e.g. 8GiB, or none (default %dGiB)"
                        % (_default_limit() >> 30))
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--report", action="store_true",
                   help="also write OUT/report.html, the run's self-contained HTML report (ibemu report)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    from .runtime.commands import add_fidelity_parser, add_node_parser, add_wall_options
    add_wall_options(r)
    r.set_defaults(func=_cmd_run)
    add_node_parser(sub)
    add_fidelity_parser(sub)

    rep = sub.add_parser("report", help="write a run's self-contained HTML report (tables, interactive plots)")
    rep.add_argument("run", help="output folder of a finished run (holding results.json)")
    rep.add_argument("-o", "--out", help="HTML file to write (default RUN/report.html)")
    rep.set_defaults(func=_cmd_report)

    ex = sub.add_parser("examples", help="list the shipped scenarios, print one, or copy one out for editing")
    ex.add_argument("name", nargs="?", help="a shipped scenario (without it: list them)")
    ex.add_argument("--copy", metavar="DIR", help="copy the scenario (and the files it names) into DIR")
    ex.set_defaults(func=_cmd_examples)

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
    _connect_timeout_option(rp)
    rp.set_defaults(func=_cmd_reproduce)

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
    _connect_timeout_option(sw)
    sw.add_argument("--window", type=_window, metavar="FROM,TO", help="measure the metrics over FROM..TO ms")
    sw.add_argument("--metric", help="the plotted metric (default: victim, else a group's or flow's throughput)")
    sw.add_argument("--x", help="the plot's x axis: a swept key (default the first)")
    sw.add_argument("--lines", action="append", metavar="KEY", help="one line per value of KEY (default: the "
                                                                    "other swept keys)")
    sw.add_argument("--point-plots", action="store_true", help="write each point's PNG plots too")
    sw.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=_cmd_sweep)

    st = sub.add_parser("study", help="run a study on your scenario file (congestion_tree: a hot spot on a fat tree "
                                      "under none, hp, cca, dcms)")
    st.add_argument("study", choices=["congestion_tree", "interference", "adaptive"])
    st.add_argument("scenario", nargs="?", help="scenario file (default the shipped scenarios/congestion_tree.toml)")
    st.add_argument("--cases", help="comma-separated subset of baseline,none,hp,cca,dcms (default all)")
    st.add_argument("--ci-size", action="store_true", help="shrink to the CI size (32 hosts, 2 ms)")
    st.add_argument("--out", help="output folder (default studies/congestion_tree)")
    st.set_defaults(func=_cmd_study)

    ro = sub.add_parser("routes", help="the scenario's forwarding tables (OpenSM's engines) and their balance")
    ro.add_argument("scenario", help="scenario TOML file")
    ro.add_argument("--engine", choices=("minhop", "updn", "ftree", "file"), help="routing engine (default: [routing])")
    ro.add_argument("--lmc", type=int, choices=range(8), metavar="N", help="LMC 0..7 (default: [routing])")
    ro.add_argument("--dump", metavar="FILE", help="write the LFTs to FILE")
    ro.add_argument("--format", choices=("opensm", "ibroute"), default="opensm",
                    help="dump format: opensm-lfts.dump (default) or ibroute output")
    ro.set_defaults(func=_cmd_routes)

    pq = sub.add_parser("perfquery", help="a port's counters in perfquery format, from a run's output folder")
    pq.add_argument("run", help="output folder of a finished run (holding results.json)")
    pq.add_argument("target", help="node name or LID")
    pq.add_argument("port", nargs="?", type=int, help="port number (default: the node's first port)")
    pq.add_argument("-x", "--extended", action="store_true", help="PortCountersExtended (64-bit)")
    pq.add_argument("--live", action="store_true",
                    help="ask a running wall-clock emulation (its --out folder) with a PerfMgt MAD")
    pq.add_argument("--via", help="--live: the HCA that sends the MAD (default: the lowest LID)")
    pq.set_defaults(func=_cmd_perfquery)

    cc = sub.add_parser("ccconfig", help="set congestion control in a running emulation, as ibccconfig does")
    cc.add_argument("run", help="output folder of a running wall-clock emulation")
    cc.add_argument("op", help="SwitchCongestionSetting (SS), SwitchPortCongestionSetting (SP), "
                               "CACongestionSetting (CS) or CongestionControlTable (CT)")
    cc.add_argument("target", help="node name or LID")
    cc.add_argument("values", nargs="+", help="the attribute's fields in ibccconfig's order "
                                              "(SP: portnum valid control_type threshold packet_size marking_rate)")
    cc.add_argument("-c", "--cckey", type=lambda x: int(x, 0), default=0, help="CC_Key (default 0)")
    cc.add_argument("--via", help="the HCA that sends the MAD (default: the lowest LID)")
    cc.set_defaults(func=_cmd_ccconfig)

    d = sub.add_parser("decode", help="print a capture one frame per line")
    d.add_argument("file")
    d.add_argument("--fecn", action="store_true", help="only FECN-marked packets")
    d.add_argument("--becn", action="store_true", help="only BECN-marked packets")
    d.add_argument("--opcode", help="only this OpCode (name such as RC_ACKNOWLEDGE, or number)")
    d.add_argument("--lid", type=int, help="only packets from or to this LID")
    d.add_argument("--no-links", action="store_true", help="hide link flow-control packets")
    d.set_defaults(func=_cmd_decode)

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
    tp.set_defaults(func=_cmd_topology)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
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

"""The command-line side of the runtime: ``ibemu run --clock wall``, ``ibemu node`` and
``ibemu fidelity`` (issue 4 items 2, 4, 6).  Bad input gives one line and exit 2
(:class:`~ibemu.errors.UserError`); a failed run exits 1, Ctrl-C 130; an invalid run
(:mod:`ibemu.runtime.verdict`) exits 4 (:data:`ibemu.runtime.verdict.EXIT_INVALID`) unless
``--allow-late``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from ..core import core_kind
from ..errors import UserError
from ..resources import lua_plugin, scenario_names, scenario_source
from ..validate import cli_number
from ..wire.shim import DEFAULT_PORT_BASE
from . import DEFAULT_DILATION

if TYPE_CHECKING:
    from ..scenario import Scenario

    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


_positive_float = cli_number(float, "a number", lambda v: None if v > 0 else "must be positive")
_positive_int = cli_number(int, "an integer", lambda v: None if v >= 1 else "must be at least 1")


def _dilation(text: str) -> float:
    """--dilation: finite, in [MIN_DILATION, MAX_DILATION] (issue 14; reasons in ibemu.units)."""
    from ..units import parse_dilation
    try:
        return parse_dilation(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _exit_status(result_validity: dict[str, object], allow_late: bool) -> int:
    """0, or :data:`~ibemu.runtime.verdict.EXIT_INVALID` for an invalid run not allowed late."""
    from .verdict import EXIT_INVALID
    return 0 if result_validity.get("valid", True) or allow_late else EXIT_INVALID


def _watchdog_seconds(text: str) -> float:
    from .controller import MAX_WATCHDOG, MIN_WATCHDOG
    return cli_number(float, "seconds", lambda v: None if MIN_WATCHDOG <= v <= MAX_WATCHDOG    # also nan, inf
                      else "must be between %g and %g seconds" % (MIN_WATCHDOG, MAX_WATCHDOG))(text)


def _placement(text: str) -> list[list[str]]:
    """--place: the groups' syntax here; the names are checked against the fabric later
    (:func:`ibemu.runtime.partition.placement`)."""
    from .partition import parse_placement
    try:
        return parse_placement(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_wall_options(p: argparse.ArgumentParser, watchdog: bool = True) -> None:
    """--workers / --dilation / --port-base (and --watchdog, for ``run``), for ``run``
    and ``fidelity``."""
    p.add_argument("--workers", type=_positive_int, default=None,
                   help="wall clock: worker processes (default: the number of cores, %d here)"
                        % (os.cpu_count() or 1))
    p.add_argument("--place", type=_placement, default=None, metavar="NODES/NODES/...",
                   help="wall clock: which worker runs which nodes, a group per worker, e.g. "
                        "'A,B,L1,L2/BC' (every node once; sets --workers).  Default: each switch with "
                        "its HCAs, balanced over the workers.  With --sync exact the results do not "
                        "depend on it; the speed may")
    p.add_argument("--dilation", type=_dilation, default=DEFAULT_DILATION,
                   help="wall clock: wall seconds per emulated second (default %d)" % DEFAULT_DILATION)
    p.add_argument("--port-base", type=int, default=DEFAULT_PORT_BASE,
                   help="wall clock: first UDP port to try (default %d)" % DEFAULT_PORT_BASE)
    p.add_argument("--no-realtime", dest="realtime", action="store_false",
                   help="wall clock: do not ask for real-time scheduling for the workers")
    add_validity_options(p, sync=True)
    if watchdog:
        from .workers import WATCHDOG
        p.add_argument("--watchdog", type=_watchdog_seconds, default=WATCHDOG, metavar="SECONDS",
                       help="wall clock: a worker silent (no heartbeat) this long is reported as hung "
                            "and the run stops with partial results (default %g)" % WATCHDOG)


def add_validity_options(p: argparse.ArgumentParser, sync: bool = True) -> None:
    """--sync and --allow-late (issue 27; the README's "One answer on both clocks"):
    ``run``, ``fidelity``, ``node``."""
    from .verdict import SYNC_MODES
    v = p.add_argument_group("wall clock: synchronisation and validity (issue 27)")
    if sync:
        v.add_argument("--sync", choices=SYNC_MODES, default="exact",
                       help="exact (default): the workers synchronise conservatively, so the results are "
                            "the virtual clock's at any dilation and placement, and a machine too slow for "
                            "--dilation runs slower; free: each worker keeps its own pace (live "
                            "demonstrations; peers that do not speak the promises), judged against the "
                            "fabric's time-scale")
    v.add_argument("--allow-late", action="store_true",
                   help="accept an invalid run: results.json still says \"valid\": false, but the exit "
                        "status is 0 (without it an invalid run exits 4)")


def capture_hint(pcap: str | Path) -> str:
    """The line telling how to open the capture in Wireshark with ibemu's plugin (the
    repository's copy when run from it, else the installed one:
    :func:`ibemu.resources.lua_plugin`)."""
    return "open the capture with: wireshark -X lua_script:%s %s" % (lua_plugin(), pcap)


def capture_links_hint(example: str) -> str:
    """The line after :func:`capture_hint`: the capture's interfaces are the directed
    links (issue 18 item 1), with a display filter that selects one (*example*: a label)."""
    return ('one interface per directed link: display filter frame.interface_name == "%s" '
            "(Statistics > Capture File Properties lists them)" % example)


def resolve_scenario(arg: str) -> str | Path:
    """What a command's SCENARIO argument reads, as for ``ibemu run``: a file, or the
    shipped scenario of that name (:func:`ibemu.resources.scenario_source`); one line
    naming the shipped ones when it is neither."""
    source = scenario_source(arg)
    if source == arg and not Path(arg).exists() and not any(c in arg for c in "/.\\"):
        raise UserError("%s: no such file, nor a shipped scenario (shipped: %s)"
                        % (arg, ", ".join(scenario_names())))
    return source


def cmd_run_wall(args: argparse.Namespace, scn: Scenario) -> int:
    """``ibemu run --clock wall``: *scn* already loaded with the overrides."""
    from ..results import format_summary_table
    from ..results.summary import link_levels
    from .controller import run_wall
    from .report import format_runtime_line
    from .verdict import format_verdict
    from .workers import WallRunError
    out = args.out or "runs/%s" % scn.name
    try:
        result = run_wall(scn, out_dir=out, pcap=args.pcap, workers=args.workers,
                          dilation=args.dilation, progress=False if args.quiet else None,
                          port_base=args.port_base, announce=not args.quiet,
                          realtime=args.realtime, watchdog=args.watchdog, sync=args.sync,
                          place=args.place)
    except WallRunError as e:
        print("ibemu run: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ibemu run: interrupted; partial results in %s/" % out, file=sys.stderr)
        return 130
    if not args.quiet:
        print(format_summary_table(result.summary, link_levels(scn), out))
        print("wall clock, dilation %g, %d workers: %d events in %.2f s wall, %s core" % (
            args.dilation, len(result.runtime["workers"]), result.events, result.wall_seconds, core_kind()))
        print(format_runtime_line(result.runtime))
        print("results in %s/" % out)
        if args.pcap:
            print(capture_hint(args.pcap))
            if scn.links:
                print(capture_links_hint(scn.links[0].labels()[0]))
    if not args.quiet or not result.valid:
        print(format_verdict(result.validity, args.allow_late), file=sys.stdout if result.valid else sys.stderr)
    return _exit_status(result.validity, args.allow_late)


# ---------------------------------------------------------------- ibemu node

def add_node_parser(sub: Subparsers) -> None:
    n = sub.add_parser("node", help="run some of a scenario's nodes in real time (several hosts)",
                       description="Run the nodes --nodes of SCENARIO on the UDP addresses of an "
                                   "address map (--map), from an agreed instant (--start-at). "
                                   "Write a map with --make-map.")
    n.add_argument("scenario", nargs="?",
                   help="scenario file (TOML), or the name of a shipped scenario, e.g. quickstart")
    n.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario value")
    n.add_argument("--seed", type=int)
    n.add_argument("--duration")
    n.add_argument("--map", help="address map (TOML, \"node:port\" = \"host:udp\")")
    n.add_argument("--nodes", help="comma-separated node names to run here")
    n.add_argument("--make-map", metavar="FILE", help="write an address map for the scenario and a fresh "
                                                      "key file (FILE.key, mode 0600) and exit")
    n.add_argument("--key", metavar="FILE", help="the run's secret, owner-only (default: the map's path + .key)")
    n.add_argument("--place", action="append", metavar="NODES=HOST",
                   help="with --make-map: these comma-separated nodes use HOST (default 127.0.0.1)")
    n.add_argument("--port-base", type=int, default=DEFAULT_PORT_BASE)
    n.add_argument("--dilation", type=_dilation, default=DEFAULT_DILATION)
    n.add_argument("--start-at", help="start instant: Unix time in seconds, or +N (N s from now); "
                                      "every host must be given the same")
    n.add_argument("--out", help="write this part's results (JSON) into this folder")
    n.add_argument("--pcap", help="write the frames these nodes send to this capture")
    n.add_argument("--no-realtime", dest="realtime", action="store_false",
                   help="do not ask for real-time scheduling")
    m = n.add_argument_group("under MPI (mpiexec -n N ibemu node SCENARIO ...; srun): one emulation over the ranks")
    m.add_argument("--mpi", action="store_true",
                   help="run as a rank of an MPI job (the default when an MPI launcher started this process "
                        "and no --map is given): parts from the placement, addresses through MPI, rank 0 "
                        "writes --out and --pcap")
    m.add_argument("--iface", help="--mpi: the network interface whose address the ranks use "
                                   "(default: loopback on one host, else the address nearest the other ranks')")
    m.add_argument("--watchdog", type=_watchdog_seconds, default=None, metavar="SECONDS",
                   help="--mpi: a worker silent this long counts as hung")
    m.add_argument("--no-plots", action="store_true", help="--mpi: skip the PNG plots")
    add_validity_options(n)
    n.add_argument("--sync-file", help=argparse.SUPPRESS)       # one host's shared records (syncshm)
    n.add_argument("--processes", type=_positive_int, default=2, metavar="N",
                   help="--sync exact across hosts: how many processes run the scenario's nodes, counting "
                        "this one and any external peer (default 2); every process must be given the same")
    n.add_argument("--control", action="store_true", help=argparse.SUPPRESS)
    n.add_argument("--part", help=argparse.SUPPRESS)
    n.add_argument("--parent", type=int, default=0, help=argparse.SUPPRESS)
    n.add_argument("--scenario-json", help=argparse.SUPPRESS)
    n.add_argument("--drop-link-every", type=int, default=0, help=argparse.SUPPRESS)
    n.add_argument("--faults-until", type=int, default=None, help=argparse.SUPPRESS)
    n.add_argument("--check-integrity", action="store_true", help=argparse.SUPPRESS)
    n.set_defaults(func=cmd_node)


def _load(args: argparse.Namespace) -> Scenario:
    """The scenario of ``ibemu node`` / ``ibemu fidelity``, with the overrides (the
    controller hands its workers the scenario it loaded as JSON data, :mod:`.handover`)."""
    from ..scenario import load_scenario
    if getattr(args, "scenario_json", None):
        from .handover import read_scenario
        return read_scenario(args.scenario_json)
    if not args.scenario:
        raise UserError("node: a scenario file is required")
    source = resolve_scenario(args.scenario)
    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append("scenario.seed=%d" % args.seed)
    if args.duration is not None:
        overrides.append('scenario.duration="%s"' % args.duration)
    return load_scenario(source, overrides)


def _start_at(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return time.time() + float(text[1:]) if text.startswith("+") else float(text)
    except ValueError:
        raise UserError("--start-at: expected Unix seconds or +N, got %r" % text) from None


def cmd_node(args: argparse.Namespace) -> int:
    if not args.control:
        return _node(args)
    from .worker import Control, describe_error
    try:                # a controller's worker: its error goes up the control channel as one line
        return _node(args)
    except UserError as e:
        Control().send(event="error", message=str(e))
        raise
    except Exception as e:
        Control().send(event="error", message=describe_error(e))
        raise


def _node_mpi(args: argparse.Namespace) -> int:
    """``ibemu node`` as a rank of an MPI job (:mod:`.mpi`): exit 0, 1 when a rank's
    worker failed (partial results), 2 bad input, 4 invalid (:mod:`.verdict`) without
    ``--allow-late`` (every rank the same status)."""
    from .launcher import shield_rank, under_mpi
    if under_mpi():                     # first: it forks (see there: a rank process that dies)
        shield_rank()
    from ..results import format_summary_table
    from ..results.summary import link_levels
    from .mpi import run_mpi
    from .mpi_outcome import end_orphaned
    from .report import format_runtime_line
    from .verdict import format_verdict
    from .workers import WATCHDOG, WallRunError
    scn = _load(args)
    if args.no_plots:
        scn.output.plots = False
    out = args.out or "runs/%s" % scn.name
    try:
        run = run_mpi(scn, out_dir=out, pcap=args.pcap, dilation=args.dilation, port_base=args.port_base,
                      iface=args.iface, realtime=args.realtime, watchdog=args.watchdog or WATCHDOG,
                      sync=args.sync, allow_late=args.allow_late)
    except WallRunError as e:
        print("ibemu node: %s" % e, file=sys.stderr)
        return 1
    if run.rank != 0:
        if run.message:
            print("ibemu node: rank %d: %s" % (run.rank, run.message), file=sys.stderr, flush=True)
        if run.orphaned:
            end_orphaned(run.status)
        return run.status
    if run.message:
        print("ibemu node: %s" % run.message, file=sys.stderr)
    result = run.result
    if result is not None and result.out_dir is not None:
        ranks = result.runtime.get("ranks", [])
        print(format_summary_table(result.summary, link_levels(scn), out))
        print("MPI, %d ranks, dilation %g: %d events in %.2f s wall; last emulated times %s" % (
            len(ranks), args.dilation, result.events, result.wall_seconds,
            ", ".join("rank %d %.3f ms" % (r["rank"], r["last_t_ps"] / 1e9) for r in ranks)))
        print(format_runtime_line(result.runtime))
        print("results in %s/" % out)
        if args.pcap:
            print(capture_hint(args.pcap))
    if run.orphaned:
        end_orphaned(run.status)
    if run.validity and not run.message:
        print(format_verdict(run.validity, args.allow_late),
              file=sys.stdout if run.validity["valid"] else sys.stderr)
    return run.status


def _node(args: argparse.Namespace) -> int:
    from .launcher import under_mpi
    if args.mpi or (under_mpi() and not args.map and not args.make_map and not args.control):
        return _node_mpi(args)
    from ..build import build_fabric
    from .addrmap import assign, key_path, link_labels, new_key, read_key, read_map, write_key, write_map
    from .report import format_node_summary
    from .worker import run_worker
    scn = _load(args)
    if args.make_map:
        fabric = build_fabric(scn)
        hosts: dict[str, str] = {}
        for spec in args.place or []:
            names, sep, host = spec.rpartition("=")
            if not sep or not names or not host or ":" in host or " " in host:
                raise UserError("--place %r: expected NODE[,NODE...]=HOST (an IPv4 address or name)" % spec)
            for name in names.split(","):
                if name not in fabric.nodes:
                    raise UserError("--place: no node %r in %s" % (name, scn.name))
                hosts[name] = host
        amap = assign(fabric, lambda n: hosts.get(n, "127.0.0.1"), args.port_base)
        write_map(args.make_map, amap, link_labels(fabric))
        kfile = args.key or key_path(args.make_map)
        write_key(kfile, new_key())
        print("wrote %d port addresses to %s and a new key to %s (copy both to every host)" % (
            len(amap), args.make_map, kfile))
        return 0
    if not args.map or not args.nodes:
        raise UserError("node: --map FILE and --nodes A,B,... are required (or --make-map FILE)")
    fabric = build_fabric(scn)
    amap = read_map(args.map, fabric)
    names = [n for n in args.nodes.split(",") if n]
    unknown = [n for n in names if n not in fabric.nodes]
    if unknown or not names:
        raise UserError("node: no node %s in %s (nodes: %s)" % (
            ", ".join(unknown) or "given", scn.name, ", ".join(fabric.nodes)))
    key = None if args.control else read_key(args.key or key_path(args.map))
    start_at = _start_at(args.start_at)
    if not args.control and start_at is None:
        raise UserError("node: --start-at is required (the same instant on every host), e.g. --start-at +5")
    part = args.part
    if args.out and not part:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        part = str(Path(args.out) / ("node-%s.json" % "_".join(names)))
    try:
        data = run_worker(scn, names, amap, args.dilation, part=part, pcap=args.pcap,
                          control=args.control, start_at=start_at, parent=args.parent,
                          drop_link_every=args.drop_link_every, realtime=args.realtime,
                          faults_until=args.faults_until, integrity=args.check_integrity, key=key,
                          sync=args.sync, sync_file=args.sync_file, processes=args.processes)
    except UserError as e:
        if args.control:
            import json
            print(json.dumps({"event": "error", "message": str(e)}), flush=True)
        raise
    except KeyboardInterrupt:
        return 130
    if not args.control:
        print(format_node_summary(scn, names, data))
        if part:
            print("part results in %s" % part)
    return 0


# ---------------------------------------------------------------- ibemu fidelity

def add_fidelity_parser(sub: Subparsers) -> None:
    f = sub.add_parser("fidelity", help="run a scenario on both clocks and compare throughputs",
                       description="Runs SCENARIO on the virtual clock and on the wall clock and "
                                   "prints, per flow and per link, wall throughput / virtual throughput.")
    f.add_argument("scenario", help="scenario file (TOML), or the name of a shipped scenario")
    f.add_argument("--set", action="append", metavar="KEY=VALUE")
    f.add_argument("--seed", type=int)
    f.add_argument("--duration")
    f.add_argument("--out", help="also write the wall run's output folder here")
    f.add_argument("--tolerance", type=_positive_float, default=None,
                   help="exit 1 when a ratio is off by more than this fraction (e.g. 0.05)")
    add_wall_options(f, watchdog=False)
    f.set_defaults(func=cmd_fidelity)


def cmd_fidelity(args: argparse.Namespace) -> int:
    from .fidelity import compare, format_fidelity
    from .workers import WallRunError
    scn = _load(args)
    try:
        report = compare(scn, args.dilation, workers=args.workers, out_dir=args.out,
                         port_base=args.port_base, realtime=args.realtime, sync=args.sync,
                         allow_late=args.allow_late, place=args.place)
    except WallRunError as e:
        print("ibemu fidelity: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ibemu fidelity: interrupted", file=sys.stderr)
        return 130
    print(format_fidelity(report))
    status = _exit_status(report["validity"], args.allow_late)
    if status:
        return status
    if args.tolerance is not None:
        worst = report["worst"]
        if worst is not None and worst > args.tolerance:
            print("off by %.1f %% > %.1f %%" % (100 * worst, 100 * args.tolerance))
            return 1
    return 0

"""The command-line side of the runtime: ``ibemu run --clock wall`` and ``ibemu fidelity``
(issue 4 items 2, 6), and the options they share with ``ibemu node`` (:mod:`.node_command`).
Bad input gives one line and exit 2 (:class:`~ibemu.errors.UserError`); a failed run
exits 1, Ctrl-C 130; an invalid run (:mod:`ibemu.runtime.verdict`) exits 4
(:data:`ibemu.runtime.verdict.EXIT_INVALID`) unless ``--allow-late``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from ..core import core_kind
from ..errors import UserError
from ..resources import lua_plugin, scenario_names, scenario_source
from ..validate import cli_number
from ..wire.shim import DEFAULT_PORT_BASE
from . import DEFAULT_DILATION, WATCHDOG

if TYPE_CHECKING:
    from ..scenario import Scenario

    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


_positive_float = cli_number(float, "a number", lambda v: None if v > 0 else "must be positive")
positive_int = cli_number(int, "an integer", lambda v: None if v >= 1 else "must be at least 1")


def dilation_arg(text: str) -> float:
    """--dilation: finite, in [MIN_DILATION, MAX_DILATION] (issue 14; reasons in ibemu.units)."""
    from ..units import parse_dilation
    try:
        return parse_dilation(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def exit_status(result_validity: dict[str, object], allow_late: bool) -> int:
    """0, or :data:`~ibemu.runtime.verdict.EXIT_INVALID` for an invalid run not allowed late."""
    from .verdict import EXIT_INVALID
    return 0 if result_validity.get("valid", True) or allow_late else EXIT_INVALID


def watchdog_seconds(text: str) -> float:
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
    p.add_argument("--workers", type=positive_int, default=None,
                   help="wall clock: worker processes (default: the number of cores, %d here)"
                        % (os.cpu_count() or 1))
    p.add_argument("--place", type=_placement, default=None, metavar="NODES/NODES/...",
                   help="wall clock: which worker runs which nodes, a group per worker, e.g. "
                        "'A,B,L1,L2/BC' (every node once; sets --workers).  Default: each switch with "
                        "its HCAs, balanced over the workers.  With --sync exact the results do not "
                        "depend on it; the speed may")
    p.add_argument("--dilation", type=dilation_arg, default=DEFAULT_DILATION,
                   help="wall clock: wall seconds per emulated second (default %d)" % DEFAULT_DILATION)
    p.add_argument("--port-base", type=int, default=DEFAULT_PORT_BASE,
                   help="wall clock: first UDP port to try (default %d)" % DEFAULT_PORT_BASE)
    p.add_argument("--no-realtime", dest="realtime", action="store_false",
                   help="wall clock: do not ask for real-time scheduling for the workers")
    add_validity_options(p, sync=True)
    if watchdog:
        p.add_argument("--watchdog", type=watchdog_seconds, default=WATCHDOG, metavar="SECONDS",
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
    return exit_status(result.validity, args.allow_late)


def load_scenario_args(args: argparse.Namespace) -> Scenario:
    """The scenario of ``ibemu node`` / ``ibemu fidelity``, with the overrides (the
    controller hands its workers the scenario it loaded as JSON data, :mod:`.handover`)."""
    from ..scenario import load_scenario
    if getattr(args, "scenario_json", None):
        from .handover import read_scenario
        return read_scenario(args.scenario_json)
    if not args.scenario:
        raise UserError("node: a scenario file is required")
    from ..scenario.overrides import run_overrides
    source = resolve_scenario(args.scenario)
    return load_scenario(source, run_overrides(args.set, args.seed, args.duration))


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
    scn = load_scenario_args(args)
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
    status = exit_status(report["validity"], args.allow_late)
    if status:
        return status
    if args.tolerance is not None:
        worst = report["worst"]
        if worst is not None and worst > args.tolerance:
            print("off by %.1f %% > %.1f %%" % (100 * worst, 100 * args.tolerance))
            return 1
    return 0

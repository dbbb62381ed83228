"""``ibemu node`` (issue 4 item 4; issue 17 Deliver 3 under MPI): some of a scenario's
nodes run in real time on this host, from an address map and an agreed start instant;
a map written with ``--make-map``; a controller's worker (``--control``); or one rank of
an MPI job (:mod:`.mpi`).  The options it shares with ``ibemu run --clock wall`` are in
:mod:`.commands`."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..wire.shim import DEFAULT_PORT_BASE
from . import DEFAULT_DILATION
from .commands import (
    add_validity_options,
    capture_hint,
    dilation_arg,
    load_scenario_args,
    positive_int,
    watchdog_seconds,
)

if TYPE_CHECKING:
    from .commands import Subparsers


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
    n.add_argument("--dilation", type=dilation_arg, default=DEFAULT_DILATION)
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
    m.add_argument("--watchdog", type=watchdog_seconds, default=None, metavar="SECONDS",
                   help="--mpi: a worker silent this long counts as hung")
    m.add_argument("--no-plots", action="store_true", help="--mpi: skip the PNG plots")
    add_validity_options(n)
    n.add_argument("--sync-file", help=argparse.SUPPRESS)       # one host's shared records (syncshm)
    n.add_argument("--processes", type=positive_int, default=2, metavar="N",
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
    scn = load_scenario_args(args)
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
    scn = load_scenario_args(args)
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

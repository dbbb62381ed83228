"""The commands that stand in for infiniband-diags and OpenSM's tools on an emulated
fabric: ``ibemu routes`` (the LFTs, as OpenSM dumps them or ibroute prints them),
``ibemu perfquery``, ``ibemu ccconfig`` (ibccconfig) and ``ibemu topology``
(ibnetdiscover text in and out)."""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import OutputError, UserError
from .scenarios import scenario_argument


def cmd_routes(args) -> int:
    """``ibemu routes``: the scenario's LFTs from its routing engine (or --engine/--lmc),
    written in OpenSM's or ibroute's format, and a balance table per switch level."""
    from ..build import scenario_routes, subnet_of, switch_lids
    from ..routing import write_ibroute, write_opensm
    from ..routing.graph import balance
    from ..scenario.read import load_scenario
    scn = load_scenario(scenario_argument(args.scenario))
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


def cmd_perfquery(args) -> int:
    if args.live:
        from ..runtime.mgmt import live_perfquery
        print(live_perfquery(args.run, args.target, args.port, extended=args.extended, via=args.via))
        return 0
    from ..perfquery import EXIT_IBERROR, PerfqueryError, from_run
    try:
        print(from_run(args.run, args.target, args.port, extended=args.extended))
    except PerfqueryError as e:         # as infiniband-diags' perfquery fails (issue 18 item 8)
        print(e.tool_line())
        print("ibemu: %s" % e, file=sys.stderr)
        return EXIT_IBERROR
    return 0


def cmd_ccconfig(args) -> int:
    from ..runtime.mgmt import live_ccconfig
    print(live_ccconfig(args.run, args.op, args.target, args.values, cc_key=args.cckey, via=args.via))
    return 0


def write_text(path: str | None, text: str) -> None:
    """*text* to the file *path*, or to standard output when it is None or "-"."""
    if path in (None, "-"):
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise OutputError.from_os(path, e) from None


def cmd_topology(args) -> int:
    """``ibemu topology import|export``: ibnetdiscover text <-> a scenario's topology (issue 15)."""
    from ..scenario.ibnetdiscover import read_ibnetdiscover
    from ..scenario.ibnetdiscover_export import write_ibnetdiscover
    from ..scenario.ibnetdiscover_import import scenario_toml
    if args.op == "import":
        topo = read_ibnetdiscover(args.file)
        write_text(args.out, scenario_toml(topo, names=args.names, rate_from=args.rate_from,
                                           duration=args.duration))
        if args.out not in (None, "-"):
            print("%d switches, %d HCAs, %d links written to %s (add [[flow]] or [[traffic]] tables)"
                  % (len(topo.switches()), sum(len(n.ports) for n in topo.cas()), len(topo.links), args.out))
        return 0
    from ..scenario import load_scenario
    write_text(args.out, write_ibnetdiscover(load_scenario(args.file)))
    return 0

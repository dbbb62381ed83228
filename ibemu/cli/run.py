"""``ibemu run`` and ``ibemu report``: a scenario run on either clock, the notes printed
before it, and the run's HTML report."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .scenarios import default_out, scenario_argument

if TYPE_CHECKING:
    from ..scenario import Scenario


def opensm_note(scn) -> str | None:
    """One line on the opensm.conf of ``[cc.cca]`` beyond congestion control (issue 18
    item 9): the routing it selected (or the ``[routing]`` keys that overrode it), and
    every other non-CC option listed once as not modelled.  None when there is none."""
    from ..cc.cca.settings import CCASpec
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
    from ..build import routing_notes
    note = opensm_note(scn)
    lines = [note] if note else []
    for n in routing_notes(scn):
        lines.append("ibemu: " + (n if n.startswith("routing: ") else "routing: " + n))
    return lines


def cmd_run(args) -> int:
    from ..run import print_summary, run_virtual
    from ..scenario import load_scenario
    from ..scenario.overrides import run_overrides
    source = scenario_argument(args.scenario)
    overrides = run_overrides(args.set, args.seed, args.duration)
    if getattr(args, "snaplen", None) is not None:     # issue 18: checked as the scenario key
        overrides.append("output.snaplen=%d" % args.snaplen)
    for key in ("loss", "duplicate", "reorder", "reorder_depth", "corrupt"):   # issue 8: all links
        value = getattr(args, key, None)
        if value is not None:
            overrides.append("faults.%s=%s" % (key, value))
    from ..results.phases import Phases
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
        from ..runtime.commands import cmd_run_wall
        status = cmd_run_wall(args, scn)
        if args.report and status in (0, 4):    # 4: written, but invalid (ibemu.runtime.verdict)
            write_html_report(args.out, None, args.quiet)
        return status
    from ..results.plot_worker import started
    with started(scn) as plotter:      # forked now: matplotlib imported while the fabric is built and run
        result = run_virtual(scn, out_dir=args.out, pcap=args.pcap,
                             progress=False if args.quiet else None, phases=phases, plotter=plotter)
    if not args.quiet:
        print_summary(result)
        if args.pcap:
            from ..runtime.commands import capture_hint, capture_links_hint
            print(capture_hint(args.pcap))
            if scn.links:
                print(capture_links_hint(scn.links[0].labels()[0]))
    if args.report:
        write_html_report(args.out, None, args.quiet)
    return 0


def write_html_report(run_dir: str, path: str | None, quiet: bool = False) -> None:
    from ..results.report import write_report
    written = write_report(run_dir, path)
    if not quiet:
        print("report: %s (one self-contained HTML file: open it in a browser)" % written)


def cmd_report(args) -> int:
    """``ibemu report RUN_DIR [-o FILE]``: the run's HTML report (issue 18 item 3)."""
    write_html_report(args.run, args.out)
    return 0

"""Scenario arguments and the shipped scenarios: a file or a shipped scenario's name,
the default output folder, and ``ibemu examples``."""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import OutputError, UserError


def scenario_argument(name: str) -> str:
    """A scenario argument: a file, or a shipped scenario's name (``quickstart``)."""
    from ..resources import scenario_names, scenario_source
    source = scenario_source(name)
    if source == name and not Path(source).exists() and not any(c in source for c in "/.\\"):
        raise UserError("%s: no such file, nor a shipped scenario (shipped: %s)"
                        % (source, ", ".join(scenario_names())))
    return source

def cmd_examples(args) -> int:
    """``ibemu examples [NAME [--copy DIR]]``: the shipped scenarios (issue 18 item 6)."""
    from ..resources import copy_scenario, scenario_description, scenario_names, shipped_scenario
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

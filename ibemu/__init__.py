"""ibemu: a packet-level InfiniBand congestion-control emulator.

The public API for scripts -- everything below is importable from ``ibemu`` itself::

    import ibemu

    scn = ibemu.load_scenario("scenarios/quickstart.toml", ['scenario.duration="1ms"'])
    scn = ibemu.santos_fig1(L=5, R=5, window=1)           # or a template, in Python
    r = ibemu.run_virtual(scn, out_dir="runs/x")          # or ibemu.run_wall(scn, ...)
    res = ibemu.load_results("runs/x")                    # results.json + CSV series
    print(res.summary["fairness"]["jain"], res.flows()["time_ms"])
    run = ibemu.load_run("runs/x")                        # the same as pandas DataFrames
    run.flow_table()["normalized"], run.links().max()      # (pip install 'ibemu[analysis]')

- load a scenario: :func:`load_scenario` (a TOML file, with ``--set``-style overrides),
  :func:`scenario_from_dict`, :func:`apply_overrides`, :class:`ScenarioError`;
- build one in Python: :class:`Scenario`, :class:`SwitchSpec`, :class:`HCASpec`,
  :class:`LinkSpec`, :class:`FlowSpec`, :class:`OutputSpec`, the parameters
  :class:`LinkParams`, :class:`SwitchParams`, :class:`HCAParams`, :class:`VLArbTable`,
  the templates :func:`santos_fig1` and :func:`quickstart`, and the time units
  ``PS_PER_NS`` .. ``PS_PER_S`` (times are integer picoseconds), :func:`parse_time`,
  :func:`parse_rate`, :func:`parse_size`, :func:`ib_rate`;
- run it: :func:`run_virtual` (virtual clock, deterministic; returns a
  :class:`RunResult`) or :func:`run_wall` (real time over worker processes and UDP;
  returns a :class:`WallResult`);
- read its results: :func:`load_results` (a :class:`Results`: the summary dict and the
  flows/links/counters/traces series as numpy arrays), :func:`read_series`,
  :func:`format_summary_table`, :func:`jain_index`; :func:`load_run` (a :class:`Run`:
  the same folder as pandas DataFrames, ``pip install 'ibemu[analysis]'``), and
  :func:`load_sweep` (a :class:`Sweep`: an ``ibemu sweep`` folder's tables as
  DataFrames and each point's :class:`Run`).

Every name is imported on first use (PEP 562 ``__getattr__``), so ``import ibemu`` stays
cheap: numpy comes with the first scenario or result, matplotlib only when plots are
written, trio only with :func:`run_wall`.
"""
from __future__ import annotations

import importlib
import os as _os
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it (the one table to change when a module moves)
_EXPORTS: dict[str, str] = {
    # load a scenario
    "load_scenario": "ibemu.scenario",
    "scenario_from_dict": "ibemu.scenario",
    "apply_overrides": "ibemu.scenario",
    "ScenarioError": "ibemu.scenario",
    "UserError": "ibemu.errors",
    # build one in Python
    "Scenario": "ibemu.scenario",
    "SwitchSpec": "ibemu.scenario",
    "HCASpec": "ibemu.scenario",
    "LinkSpec": "ibemu.scenario",
    "OutputSpec": "ibemu.scenario",
    "FlowSpec": "ibemu.fabric.params",
    "LinkParams": "ibemu.fabric.params",
    "SwitchParams": "ibemu.fabric.params",
    "HCAParams": "ibemu.fabric.params",
    "VLArbTable": "ibemu.fabric.params",
    "santos_fig1": "ibemu.scenario.builders",
    "quickstart": "ibemu.scenario.builders",
    "PS_PER_NS": "ibemu.units",
    "PS_PER_US": "ibemu.units",
    "PS_PER_MS": "ibemu.units",
    "PS_PER_S": "ibemu.units",
    "ib_rate": "ibemu.units",
    "parse_time": "ibemu.units",
    "parse_rate": "ibemu.units",
    "parse_size": "ibemu.units",
    # run it, on either clock
    "run_virtual": "ibemu.run",
    "RunResult": "ibemu.run",
    "run_wall": "ibemu.runtime.controller",
    "WallResult": "ibemu.runtime.controller",
    # read its results
    "load_results": "ibemu.results",
    "load_run": "ibemu.results",
    "Run": "ibemu.results",
    "load_sweep": "ibemu.results",
    "Sweep": "ibemu.results",
    "Results": "ibemu.results",
    "read_series": "ibemu.results",
    "read_traces": "ibemu.results",
    "format_summary_table": "ibemu.results",
    "jain_index": "ibemu.results",
}

__all__ = [
    "__version__",
    "load_scenario", "scenario_from_dict", "apply_overrides", "ScenarioError", "UserError",
    "Scenario", "SwitchSpec", "HCASpec", "LinkSpec", "OutputSpec", "FlowSpec",
    "LinkParams", "SwitchParams", "HCAParams", "VLArbTable", "santos_fig1", "quickstart",
    "PS_PER_NS", "PS_PER_US", "PS_PER_MS", "PS_PER_S", "ib_rate", "parse_time", "parse_rate", "parse_size",
    "run_virtual", "RunResult", "run_wall", "WallResult",
    "load_results", "Results", "load_run", "Run", "load_sweep", "Sweep", "read_series", "read_traces",
    "format_summary_table", "jain_index",
]   # literally, for type checkers: the same names as _EXPORTS (tests/test_api.py checks)


if _os.environ.get("IBEMU_PURE", "") not in ("", "0"):   # the compiled core's .py sources instead
    from .core import use_pure_python                   # (issue 16; ibemu/core.py, docs/packaging.md)
    use_pure_python()


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562) and keep the name here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError("module 'ibemu' has no attribute %r" % name)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value             # later look-ups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:                       # the same names, eagerly, for type checkers and IDEs
    from .errors import UserError
    from .fabric.params import FlowSpec, HCAParams, LinkParams, SwitchParams, VLArbTable
    from .results import (Results, Run, Sweep, format_summary_table, jain_index, load_results, load_run,
                           load_sweep, read_series, read_traces)
    from .run import RunResult, run_virtual
    from .runtime.controller import WallResult, run_wall
    from .scenario import ScenarioError, apply_overrides, load_scenario, scenario_from_dict
    from .scenario.builders import quickstart, santos_fig1
    from .scenario.model import HCASpec, LinkSpec, OutputSpec, Scenario, SwitchSpec
    from .units import PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US, ib_rate, parse_rate, parse_size, parse_time

"""Scenario files: TOML read, overridden, template-expanded and validated into the typed
objects of :mod:`ibemu.scenario.model`.

Every mistake is a :class:`ScenarioError`, whose ``str()`` is one whole line
``<file>: <key.path>: <reason>``.  Units: times are strings with ns/us/µs/ms/s (a bare
number is refused, except 0), sizes are integer bytes or strings with B/KB/KiB/MB/MiB
(switch buffers also "N packets"), rates are bytes/s numbers, IB link names (4x_sdr)
or strings such as "8Gb/s" and "1GB/s" (:mod:`ibemu.units`).  Defaults are those of
:mod:`ibemu.fabric.params` (seed 003 Table 1).  The site's scenario reference
(docs/reference/scenario.md, generated from :mod:`.keyref`) lists every key with its
type, unit, default and range; docs/reference/scenario-guide.md explains the sections.

- :mod:`.read`: the file and the order the sections are read in;
- :mod:`.overrides`: ``--set key.path=value``;
- :mod:`.templates`: ``[template]`` expansion (seed 003 Figure 1);
  :mod:`.builders`: the same scenarios built from Python;
- sections: :mod:`.nodes` (``[[hca]]``, ``[[switch]]``), :mod:`.links`, :mod:`.flows`,
  :mod:`.output`, :mod:`.cc` (``[cc]``, through the schemes' schemas), :mod:`.faults`;
- the checker every section and scheme schema uses is :mod:`ibemu.validate`.
"""
from __future__ import annotations

from ..units import format_time, parse_rate, parse_size, parse_time
from ..validate import ScenarioError
from .model import HCASpec, LinkSpec, OutputSpec, Scenario, SwitchSpec, link_labels
from .overrides import apply_overrides
from .read import load_scenario, scenario_from_dict

__all__ = ["ScenarioError", "load_scenario", "scenario_from_dict", "apply_overrides",
           "parse_time", "format_time", "parse_size", "parse_rate", "link_labels",
           "Scenario", "SwitchSpec", "HCASpec", "LinkSpec", "OutputSpec"]

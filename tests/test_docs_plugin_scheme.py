"""The how-to guide's complete plug-in scheme (docs/examples/plugin_scheme.py, issue 30):
it registers through ibemu.cc.register alone, marks at the switch and slows the sources.

Quick start: two greedy senders share one 1 GB/s destination link for 2 ms, so the
switch's output queue to that link fills (two inputs at line rate into one output) and
the marker must fire; each BECN at least doubles a sender's gap, so with the scheme the
senders send fewer packets than without it.  Both runs are the virtual clock's."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from ibemu import cc

ROOT = Path(__file__).resolve().parents[1]


def test_the_example_scheme_marks_and_slows_the_senders():
    spec = importlib.util.spec_from_file_location("plugin_scheme", ROOT / "docs" / "examples" / "plugin_scheme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main()
    assert out["none"]["marked"] == 0 and out["backoff"]["marked"] > 0
    for flow in ("f1", "f2"):
        assert out["backoff"][flow] < out["none"][flow]
    assert "backoff" not in [s.name for s in cc.schemes()]     # main() unregistered it

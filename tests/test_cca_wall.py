"""Both clocks run the CCA (issue 6 acceptance): the OpenSM-configured scenario on the
real-time runtime, two worker processes, marks and BECN/CNP returns as in virtual time."""
import os
from pathlib import Path

from ibemu.run import run_virtual
from ibemu.runtime.controller import run_wall
from ibemu.scenario import load_scenario

SCEN = Path(__file__).resolve().parent.parent / "scenarios" / "cca_opensm.toml"


def test_cca_runs_on_the_wall_clock_too():
    scn = load_scenario(SCEN, ["scenario.duration=1ms"])
    wall = run_wall(scn, workers=2, dilation=500, port_base=41000 + (os.getpid() % 4000) * 4)
    virt = run_virtual(scn)
    assert wall.completed
    for r in (wall, virt):
        marks = r.counters["S"]["FECN_marked:port4"]
        returned = sum(r.counters[h].get("becn_received", 0) for h in ("H1", "H2", "H3"))
        assert marks > 10
        assert returned >= marks - 3                    # a few may still be in flight at the end
        assert r.counters["H3"]["cnp_received"] > 0     # UD: CNPs
    ratio = wall.counters["S"]["FECN_marked:port4"] / virt.counters["S"]["FECN_marked:port4"]
    assert 0.5 < ratio < 2.0

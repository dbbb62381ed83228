"""Seed 002 §4.3 with DCMS (:mod:`ibemu.cc.dcms`): Experiment II on the testbed with the
manager host (:mod:`.testbed`, :mod:`.experiments`, :mod:`.figures`), Figures 5 and 6
(:mod:`.reproduce`) and the comparison of schemes (:mod:`.compare`).  docs/dcms.md."""

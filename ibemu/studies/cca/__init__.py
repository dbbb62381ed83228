"""Seed 002 §4.1–4.2 with the IBA CCA (:mod:`ibemu.cc.cca`): the two-switch, six-host
DCMS testbed (:mod:`.testbed`), Experiment I's runs (:mod:`.experiments`) and Figures 3
and 4 (:mod:`.reproduce`)."""

"""Seed 003 §5–6 with the HP scheme (:mod:`ibemu.cc.hp`): scenario builders and
measurements (:mod:`.experiments`), the runners of Figures 4–8, the comparison and the
non-compliant CA (:mod:`.figures`), and their checks (:mod:`.reproduce`)."""

"""Studies: the seed papers' figures, experiments, comparisons and testbeds, run on the
emulator (issue 12 item 4).  They sit above the runtime and the schemes and use only
their public API; nothing below imports them.

- :mod:`.reproduction` -- Check, Reproduction, RunCache (runs shared by one invocation);
- :mod:`.registry` -- the explicit list of reproductions and ``ibemu reproduce``;
- :mod:`.santos` -- seed 003 Figures 2–3 (congestion spreading, no control);
- :mod:`.hp` -- seed 003 Figures 4–8 with the HP scheme, its comparison and seed 000's
  non-compliant CA;
- :mod:`.cca` -- seed 002's DCMS testbed and Experiment I (Figures 3–4) with the CCA;
- :mod:`.dcms` -- seed 002 Experiment II (Figures 5–6) with DCMS and the comparison of
  all schemes.
"""

CONNECT_TIMEOUT = 5.0
"""Seconds to reach an existing Dask scheduler (``--connect-timeout``) before giving up:
a closed port or a wrong host fails in this time, not Dask's own 30 s.  Here, not in
:mod:`.sweep_pool`, so that the command line's options are built without importing it
(issue 28: a run's start)."""

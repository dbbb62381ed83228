"""The real-time runtime (issue 4; ../shared/DESIGN.md §1, §4): nodes in several
processes exchanging frames as UDP datagrams, emulated time = wall time / dilation.

The only package of ibemu that imports trio and socket.

- :mod:`.loop`       the trio driver of a set of nodes (clock, pacing, loss counting)
- :mod:`.sockets`    one UDP socket per node port, receive buffers sized from credits
- :mod:`.addrmap`    the address map file (node port -> host:udp)
- :mod:`.partition`  which worker runs which nodes
- :mod:`.delivery`   socket delivery: the shared scheduler's transmit and poll
- :mod:`.worker`     one worker process (``ibemu node``)
- :mod:`.workers`    the controller's worker processes: spawn, control lines, reap
- :mod:`.controller` ``ibemu run --clock wall``: plan, start, watch, stop
- :mod:`.collect`    the run's result from the workers' parts (:class:`~.collect.WallResult`)
- :mod:`.merge`      merging the workers' series, counters and captures
- :mod:`.report`     the runtime's summary lines
- :mod:`.verdict`    the verdict on a wall-clock run (exact, or free against the fabric's time-scale)
- :mod:`.mgmt`       live management MADs into a running emulation
- :mod:`.fidelity`   ``ibemu fidelity``: both clocks compared
- :mod:`.commands`   ``ibemu run --clock wall``, ``ibemu node``, ``ibemu fidelity``
- :mod:`.fuzzpeer`   a hostile peer: random and mutated datagrams at a running emulation
"""

DEFAULT_DILATION = 200
"""Wall seconds per emulated second by default: seed 003 Figure 2(a) (100 ms emulated)
then takes 20 s of wall time (benchmarks/README.md has the fidelity measured against it)."""

WATCHDOG = 5.0
"""Wall seconds a worker may stay silent (no heartbeat, no other line) before it is
reported as hung (several heartbeat intervals: a loaded machine delays some beats).
Here, not in :mod:`.workers`, so that ``ibemu run``'s options are built without
importing the worker pool (issue 28: a virtual-clock run's start)."""

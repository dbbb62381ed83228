"""Test instrumentation, kept out of the product path (issue 12 item 7): settling and
draining a fabric after a run, and the credit-leak check the test suite ends every
virtual-clock run with.

Everything here drives the fabric from outside through public operations: it runs the
engine on (:meth:`~ibemu.sim.engine.VirtualEngine.run`), stops the traffic, heals the links
and silences the recorder through the :class:`~ibemu.fabric.network.Fabric`'s own methods, and
reads the credit state with :func:`ibemu.fabric.integrity.credit_leaks` (on every
directed link and data VL, IBA 7.9.4: the sender's FCTBS equals the receiver's ABR, the
receiver's buffer is empty and the sender holds the whole buffer as credit; no queued
packet or response is left).

The test suite's hook: tests/conftest.py wraps the session in :func:`check_every_run`,
which adds :func:`check_after_run` to :data:`ibemu.run.observers`, so every
:func:`~ibemu.run.run_virtual` of a test stops its traffic once the outputs are written,
drains, and raises :class:`CreditLeak` if a credit or queue entry is missing (issue 8:
no leak, no deadlock).  No environment variable is involved.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .fabric.network import Fabric
from .fabric.integrity import credit_leaks
from .fabric.recorder import Recorder
from .run import RunContext, observers
from .sim.engine import VirtualEngine
from .units import PS_PER_MS

DRAIN_PS = 50 * PS_PER_MS
"""How long :func:`drain` lets a fabric run at most before it reports what is left."""


class CreditLeak(AssertionError):
    """Credits or queue entries were missing once a fabric had drained."""


def fc_period(fabric: Fabric) -> int:
    """The longest flow-control packet period of any port (ps; 0 without ports): the
    time within which every link has resent its cumulative FCTBS/FCCL."""
    return max((p.fc_period for n in fabric.nodes.values() for p in n.ports.values()), default=0)


def settle(engine: VirtualEngine, fabric: Fabric, periods: int = 3) -> None:
    """Heal every faulty link and run *periods* flow-control periods more, so that the
    cumulative FCTBS/FCCL of the last flow-control packets have put every credit back."""
    fabric.heal_links()
    engine.run(engine.now + periods * fc_period(fabric) + 1)


def drain(engine: VirtualEngine, fabric: Fabric, drain_ps: int | None = None) -> list[str]:
    """Stop every traffic generator, heal the faulty links, let the fabric drain and the
    periodic flow-control packets resynchronise (checking every 3 flow-control periods
    plus 1 ms, for at most *drain_ps*, default :data:`DRAIN_PS`), then return
    :func:`~ibemu.fabric.integrity.credit_leaks` (empty when every credit came back).

    Recording is switched off first (:meth:`~ibemu.fabric.network.Fabric.set_recorder`), so a
    finished run's metrics are not touched.  The engine must have no open capture (run
    by :func:`~ibemu.run.run_virtual`, whose capture is detached when it closes)."""
    fabric.set_recorder(Recorder())
    fabric.stop_traffic(engine.now)
    fabric.heal_links()
    step = 3 * fc_period(fabric) + PS_PER_MS                       # 3 flow-control periods + 1 ms
    end = engine.now + (drain_ps if drain_ps is not None else DRAIN_PS)
    while True:
        engine.run(min(engine.now + step, end))
        problems = credit_leaks(fabric)
        if not problems or engine.now >= end:
            return problems


def assert_no_credit_leak(fabric: Fabric) -> None:
    """Raise :class:`CreditLeak` when the (quiet) fabric's credit state is not idle."""
    problems = credit_leaks(fabric)
    if problems:
        raise CreditLeak("credit leak:\n  " + "\n  ".join(problems))


def check_after_run(context: RunContext) -> None:
    """The observer of :data:`ibemu.run.observers` the test suite registers: drain the
    finished run's fabric and raise :class:`CreditLeak` when a credit is missing."""
    problems = drain(context.engine, context.fabric)
    if problems:
        raise CreditLeak("credit leak after the run of %s:\n  %s"
                         % (context.scenario.name, "\n  ".join(problems)))


@contextmanager
def check_every_run() -> Iterator[None]:
    """While inside, every :func:`~ibemu.run.run_virtual` ends with :func:`check_after_run`."""
    observers.append(check_after_run)
    try:
        yield
    finally:
        observers.remove(check_after_run)

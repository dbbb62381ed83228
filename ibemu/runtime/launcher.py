"""What an MPI launcher sees of ``ibemu node`` (issue 17 Deliver 3): whether this process
is a rank (:func:`under_mpi`), and the process the launcher starts for it
(:func:`shield_rank`).  Light on purpose: :func:`shield_rank` forks, and runs before
anything that starts a thread (numpy's BLAS, MPI) is imported."""
from __future__ import annotations

import os
import signal

__all__ = ["LAUNCHER_ENV", "under_mpi", "shield_rank", "shielded_status"]

LAUNCHER_ENV = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALRANKID")
"""Variables an MPI launcher (MPICH's hydra, Open MPI, PMIx, srun --mpi=pmi2/pmix) sets
in the environment of the ranks it starts: ``ibemu node`` under one runs as a rank."""


def under_mpi(environ: dict[str, str] | None = None) -> bool:
    """Whether this process was started by an MPI launcher (:data:`LAUNCHER_ENV`)."""
    env = os.environ if environ is None else environ
    return any(k in env for k in LAUNCHER_ENV)


def shielded_status(wait_status: int) -> int:
    """The exit status the launcher's process passes on for the rank's *wait_status*:
    the rank's own, or 128 + N when signal N ended it (as a shell reports it)."""
    code = os.waitstatus_to_exitcode(wait_status)
    return 128 - code if code < 0 else code


def shield_rank() -> None:
    """Run the rest of this rank in a child process; this process -- the one the launcher
    started and will reap -- waits for it and exits with :func:`shielded_status`.  Call
    it first thing, before MPI or anything that starts a thread is imported.

    Why: MPICH's mpiexec (hydra, since MPICH 4.0) SIGKILLs the process group of every
    rank on a host as soon as its proxy reaps a rank of that host that a signal ended,
    even with ``-disable-auto-cleanup`` (src/pm/hydra/proxy/pmip.c: the ``WIFSIGNALED``
    test after ``waitpid(-1, ..., WNOHANG)`` in the proxy's main loop).  The proxy calls
    waitpid after each I/O event while a rank's stdout or stderr is open, so the living
    ranks died at the first line any of them printed (or the next event) after the dead
    one became a zombie: before or after they had written their partial outputs, at
    random.  Under this shield the process the proxy reaps never dies of a signal (the
    rank's death becomes its exit status 128 + N) and the other ranks live on; the
    launcher still learns of the death at once, from the rank's PMI connection, which
    only the rank holds (this process closes its copy of ``PMI_FD``).

    This process ignores SIGINT and SIGUSR1 (hydra signals the rank's whole process
    group, the rank included; SIGUSR1 is its notice that a rank died) and passes SIGTERM
    and SIGHUP on to the rank."""
    pid = os.fork()
    if pid == 0:
        return                                       # the rank itself
    fd = os.environ.get("PMI_FD", "")
    if fd.isdigit():
        try:
            os.close(int(fd))
        except OSError:
            pass

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:                        # (cannot happen: it is our child)
        os._exit(1)
    os._exit(shielded_status(status))

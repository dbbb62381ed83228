"""Where a sweep's points run (issue 17 Deliver 1): :class:`DaskPool`, a Dask client on a
new local cluster or an existing scheduler, and :class:`SyncPool`, one point after another
in this process (``scheduler="sync"``).  Both take points with ``submit`` and yield
``(index, row or None, error)`` from ``results`` as they finish."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import UserError
from . import CONNECT_TIMEOUT
from .sweep_plan import Row

LOCAL, SYNC = "local", "sync"
"""``scheduler`` values: a new local Dask cluster (the default), or no Dask at all."""


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, text[0] if text else "")


class SyncPool:
    """The ``sync`` scheduler: the points one after another in this process."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, Callable[[], Row]]] = []

    def submit(self, index: int, fn: Callable[..., Row], *args: Any) -> None:
        self.pending.append((index, lambda: fn(*args)))

    def results(self) -> Iterable[tuple[int, Row | None, str]]:
        for index, call in self.pending:
            try:
                yield index, call(), ""
            except Exception as e:
                yield index, None, _error_text(e)

    def close(self) -> None:
        pass


def _warm() -> None:
    """A new worker's imports of what a point runs, before the first point."""
    from .. import run, scenario   # noqa: F401


class DaskPool:
    """A Dask client: a new local cluster (``address="local"``: one single-threaded
    worker process per core, or *workers*) or the scheduler at *address*
    (``tcp://host:8786``), given up after *connect_timeout* seconds.  :meth:`map` runs a
    function over items on it (``ibemu reproduce --full``); :func:`run_sweep` submits its
    points one by one.  A context manager: the local cluster ends with it."""

    def __init__(self, address: str = LOCAL, workers: int | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        import logging

        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UserError("--scheduler %s: running the points on Dask needs its packages, which are not "
                            "installed: pip install 'ibemu[sweep]' (or --scheduler sync: one after another "
                            "in this process)" % address) from None
        self.cluster = None
        if address == LOCAL:
            n = workers or os.cpu_count() or 1
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            self.client.run(_warm)          # every worker imports the engine now, all at once
        else:
            try:
                self.client = Client(address, timeout=connect_timeout)
            except (OSError, TimeoutError, ValueError) as e:
                why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise UserError("--scheduler %s: cannot reach the Dask scheduler within %g s (%s); is it running, "
                                "and is the address right? (--connect-timeout to wait longer)"
                                % (address, connect_timeout, why)) from None
        self.futures: dict[Any, int] = {}

    def __enter__(self) -> DaskPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``[fn(x) for x in items]``, the calls spread over the cluster's workers; the
        first call's error is raised here."""
        futures = self.client.map(fn, list(items), pure=False)
        try:
            return list(self.client.gather(futures))
        finally:
            for f in futures:
                f.cancel()

    def submit(self, index: int, fn: Callable[..., Row], *args: Any) -> None:
        fut = self.client.submit(fn, *args, pure=False, key="ibemu-point-%d-%s" % (index, os.urandom(4).hex()))
        self.futures[fut] = index

    def results(self) -> Iterable[tuple[int, Row | None, str]]:
        from distributed import as_completed
        for fut in as_completed(list(self.futures)):
            index = self.futures[fut]
            try:
                yield index, fut.result(), ""
            except Exception as e:          # the point's own error, or its worker lost (KilledWorker)
                yield index, None, _error_text(e)

    def close(self) -> None:
        for fut in self.futures:
            fut.cancel()
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

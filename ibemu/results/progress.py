"""The progress bar of a long run: emulated milliseconds done of the total, on stderr,
drawn by tqdm (a dependency) and only when the stream is a terminal."""
from __future__ import annotations

import math
import sys
import time
from types import TracebackType
from typing import IO, Any

from ..units import PS_PER_MS


class Progress:
    """Emulated ms done / total on stderr (tqdm).  Shown only when *enabled* and the
    stream is a TTY; :meth:`update` is cheap to call often (redraws at most every 0.1 %).
    *pace*: also show the effective dilation so far, wall time over emulated time (the
    wall clock, issue 27 Deliver 3: a machine slower than the requested dilation runs
    slower, and says so)."""

    def __init__(self, total_ps: int, enabled: bool = True, file: IO[str] | None = None,
                 pace: bool = False) -> None:
        self.total_ps = max(0, int(total_ps))
        stream = sys.stderr if file is None else file
        isatty = getattr(stream, "isatty", None)          # a file-like object may lack it
        self._bar: Any = None                             # tqdm.tqdm while shown
        self._next: float = math.inf                      # next emulated time worth a redraw
        self._step = 0
        self._pace = pace
        self._t0 = time.monotonic()
        if enabled and self.total_ps > 0 and callable(isatty) and isatty():
            from tqdm import tqdm  # imported only when a bar is drawn
            self._bar = tqdm(total=self.total_ps / PS_PER_MS, file=stream, unit="ms", leave=False,
                             desc="emulated", dynamic_ncols=True,
                             bar_format="{desc} {n:.2f}/{total:.2f} ms {percentage:3.0f}%|{bar}| "
                                        "[{elapsed}<{remaining}{postfix}]")
            self._step = max(1, self.total_ps // 1000)
            self._next = 0

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def update(self, now_ps: int) -> None:
        """The run reached emulated time *now_ps*."""
        if now_ps < self._next:
            return
        done = min(now_ps, self.total_ps) / PS_PER_MS
        if self._pace and done > 0:
            self._bar.set_postfix_str("effective dilation %.0f" % ((time.monotonic() - self._t0) / (done / 1e3)),
                                      refresh=False)
        self._bar.update(done - self._bar.n)
        self._next = now_ps + self._step

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._next = math.inf

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

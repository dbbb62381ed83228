"""The generator of a job's queue pair (issue 29): messages the sending rank posted
(:meth:`Posted.post`), started in order; nothing else to send until the rank posts
more (a closed loop, unlike the open-loop generators of :mod:`ibemu.fabric.traffic`).
Like every generator it starts nothing at or after its ``stop`` (``Fabric.stop_traffic``)."""
from __future__ import annotations

from collections import deque

from ..traffic import Generator


class Posted(Generator):
    """Posted message sizes, in order; ready while any is waiting."""

    def __init__(self) -> None:
        super().__init__(0, None)
        self.queue: deque[int] = deque()
        self.posted = 0                     # messages posted so far

    def post(self, nbytes: int) -> None:
        """The rank posts a message of *nbytes* (at least one)."""
        self.queue.append(nbytes)
        self.posted += 1

    def next_message(self, now: int) -> tuple[bool, int | None]:
        if self.queue and now < self.stop:
            return True, None
        return False, None

    def size(self) -> int:
        return self.queue[0]

    def taken(self) -> int:
        return self.queue.popleft()

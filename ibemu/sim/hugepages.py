"""Whether a run puts Python's objects on huge pages (issue 28; :mod:`.arena`).

:func:`use_huge_pages` installs the huge-page arenas unless ``IBEMU_HUGE_PAGES=0``
(:data:`ENV`), and returns whether they are in use.  ``ibemu``'s commands call it first
thing, and :func:`ibemu.run.run_virtual` before it builds the fabric; the run calls
:func:`refresh` between its stretches of events (at its port samples), to advise what
glibc's heap grew by.  Results never depend on it: only where objects are placed in
memory changes.
"""
from __future__ import annotations

import os
from typing import Final

from . import arena

ENV: Final = "IBEMU_HUGE_PAGES"
"""``0``: leave Python's allocator as it is."""


def use_huge_pages() -> bool:
    """Install the huge-page arenas unless the environment's :data:`ENV` is ``0``."""
    if os.environ.get(ENV, "1").strip() == "0":
        return False
    return bool(arena.install())


def refresh() -> None:
    """Advise the part of glibc's heap grown since the last call (when installed)."""
    arena.refresh()

"""Huge-page arenas for Python's small-object allocator (issue 28): the pure-Python twin.

The compiled core's twin of this module is ``arena.c`` (an extension module beside the
mypyc core, ``ibemu.core.C_SOURCES``): its :func:`install` has obmalloc cut its 1 MiB
arenas from 2 MiB-aligned chunks advised ``MADV_HUGEPAGE``, so the event loop's objects
sit on huge pages and its reads miss the TLB far less (that file's text has the
measurements).  This twin changes nothing.  A run calls
:func:`ibemu.sim.hugepages.use_huge_pages`.
"""
from __future__ import annotations


def install() -> bool:
    """The compiled twin puts new arenas on huge pages; this one cannot: False."""
    return False


def refresh() -> None:
    """The compiled twin advises the part of glibc's heap grown since; here: nothing."""


def stats() -> dict[str, object]:
    """The compiled twin's counts (chunks, arenas made and free, heap bytes advised);
    here: not installed."""
    return {"installed": False, "chunks": 0, "arenas": 0, "free": 0, "arena_size": 0, "heap_advised": 0}

"""Subnet-manager routing (issue 15): OpenSM's engines over a neutral subnet graph
(:mod:`.graph`), the credit-loop check (:mod:`.cdg`) and LFT dump files (:mod:`.dump`).

Sans-I/O: the dump helpers take and return text.  REFERENCE-FABRICS §2-§4.
"""
from __future__ import annotations

from ..errors import UserError
from .cdg import check_credit_loops
from .dump import read_lfts, write_ibroute, write_opensm
from .ftree import ftree
from .graph import Routes, Subnet, SubnetNode, Tick
from .minhop import minhop
from .updn import updn

__all__ = ["ENGINES", "Subnet", "SubnetNode", "Routes", "route", "check_credit_loops", "read_lfts",
           "write_opensm", "write_ibroute"]

ENGINES = ("minhop", "updn", "ftree", "file")


def route(sn: Subnet, engine: str = "minhop", roots: list[str] | None = None, lft_text: str | None = None,
          lft_label: str = "<lfts>", notes: list[str] | None = None, tick: Tick | None = None) -> Routes:
    """The LFTs of *engine* on *sn*; "file" reads *lft_text* (an opensm-lfts.dump or
    ibroute output named *lft_label* in errors).  *tick*: called with the number of
    destination LIDs routed so far (ftree), for a progress bar."""
    if engine == "minhop":
        return minhop(sn)
    if engine == "updn":
        return updn(sn, roots, notes)
    if engine == "ftree":
        return ftree(sn, roots, tick)
    if engine == "file":
        if lft_text is None:
            raise UserError("routing: engine 'file' needs an lft_file")
        return read_lfts(lft_text, sn, lft_label)
    raise UserError("routing: unknown engine %r (known: %s)" % (engine, ", ".join(ENGINES)))

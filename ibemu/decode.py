"""``ibemu decode FILE``: a capture one frame per line (emulated time, summary), filtered."""
from __future__ import annotations

import sys

from .capture.pcapng import read_capture
from .wire import codec
from .wire.opcodes import OPCODE_BY_NAME
from .wire.summary import summarize


def parse_opcode(text: str) -> int:
    """An OpCode given as a name (RC_SEND_ONLY, case-insensitive) or a number (0x04)."""
    name = text.upper()
    if name in OPCODE_BY_NAME:
        return OPCODE_BY_NAME[name]
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError("unknown opcode %r" % text) from None


def frame_matches(frame, link: bool, fecn=False, becn=False, opcode=None, lid=None,
                  links=True) -> bool:
    if link:
        return links and not (fecn or becn or opcode is not None or lid is not None)
    try:
        f = codec.parse(frame)
    except codec.CodecError:
        return not (fecn or becn or opcode is not None or lid is not None)
    if fecn and not f.fecn:
        return False
    if becn and not f.becn:
        return False
    if opcode is not None and f.opcode != opcode:
        return False
    if lid is not None and lid not in (f.slid, f.dlid):
        return False
    return True


def decode(path, out=None, **filters) -> int:
    """Print matching frames to *out* (default: the current ``sys.stdout``); return how
    many were printed."""
    if out is None:
        out = sys.stdout
    shown = 0
    for index, rec in enumerate(read_capture(path), 1):
        frame, link, note = rec.frame, rec.link, ""
        if rec.length > len(frame):     # stored with a snap length (issue 18): the headers are all there
            note = "  [snapped: %d of %d bytes]" % (len(frame), rec.length)
            frame = frame + bytes(rec.length - len(frame))
        if frame_matches(frame, link, **filters):
            where = "  (%s)" % rec.interface if rec.interface else ""
            out.write("%6d %14.3f us  %s%s%s\n" % (index, rec.time_ns / 1000.0, summarize(frame, link), note, where))
            shown += 1
    return shown

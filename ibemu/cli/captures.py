"""``ibemu sample`` and ``ibemu decode``: a capture holding every frame kind, and a
capture printed one frame per line."""
from __future__ import annotations

import sys


def cmd_sample(args) -> int:
    from ..sample import write_sample
    from ..wire.summary import summarize
    frames = write_sample(args.pcap)
    print("wrote %d frames, one of every kind, to %s" % (len(frames), args.pcap))
    for label, link, frame in frames:
        print("  %-32s %s" % (label, summarize(frame, link)))
    from ..resources import lua_plugin
    print("open it with: wireshark -X lua_script:%s %s" % (lua_plugin(), args.pcap))
    return 0


def cmd_decode(args) -> int:
    from ..decode import decode, parse_opcode
    opcode = None
    if args.opcode is not None:
        try:
            opcode = parse_opcode(args.opcode)
        except ValueError as e:
            print("ibemu decode: %s" % e, file=sys.stderr)
            return 2
    decode(args.file, fecn=args.fecn, becn=args.becn, opcode=opcode, lid=args.lid,
           links=not args.no_links)
    return 0

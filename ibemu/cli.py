"""The ``ibemu`` command."""
from __future__ import annotations

import argparse
import sys

from . import __version__


def _cmd_sample(args) -> int:
    from .sample import write_sample
    from .wire.summary import summarize
    frames = write_sample(args.pcap)
    print("wrote %d frames, one of every kind, to %s" % (len(frames), args.pcap))
    for label, link, frame in frames:
        print("  %-32s %s" % (label, summarize(frame, link)))
    print("open it with: wireshark -X lua_script:layers/wireshark/ibemu.lua %s" % args.pcap)
    return 0


def _cmd_decode(args) -> int:
    from .decode import decode, parse_opcode
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ibemu", description=__doc__.strip() if __doc__ else None)
    p.add_argument("--version", action="version", version="ibemu " + __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("sample", help="write a capture holding every frame kind and print it decoded")
    s.add_argument("--pcap", default="sample.pcap", help="output capture (default sample.pcap)")
    s.set_defaults(func=_cmd_sample)

    d = sub.add_parser("decode", help="print a capture one frame per line")
    d.add_argument("file")
    d.add_argument("--fecn", action="store_true", help="only FECN-marked packets")
    d.add_argument("--becn", action="store_true", help="only BECN-marked packets")
    d.add_argument("--opcode", help="only this OpCode (name such as RC_ACKNOWLEDGE, or number)")
    d.add_argument("--lid", type=int, help="only packets from or to this LID")
    d.add_argument("--no-links", action="store_true", help="hide link flow-control packets")
    d.set_defaults(func=_cmd_decode)
    return p


def main(argv=None) -> int:
    from .errors import UserError
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except UserError as e:
        print("ibemu: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ibemu: interrupted", file=sys.stderr)
        return 130

"""The argument types and options shared by the ``ibemu`` commands' parsers."""
from __future__ import annotations

import argparse
import math

from ..validate import cli_number


def memory(text: str) -> int | None:
    """--max-memory: a size such as "8GiB", or "none" for no limit."""
    from ..units import parse_bytes
    if text.strip().lower() in ("none", "unlimited"):
        return None
    try:
        n = parse_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n <= 0:
        raise argparse.ArgumentTypeError("must be positive, got %r" % text)
    return n


finite_float = cli_number(float, "a number", lambda v: None if math.isfinite(v) else "must be a finite number")
"""A finite float (--loss, --duplicate, --reorder, --corrupt: probabilities)."""

def window(text: str) -> tuple[float, float]:
    """--window FROM,TO in ms."""
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError("expected FROM,TO in ms, e.g. 5,20, got %r" % text) from None
    if not (0 <= lo < hi and math.isfinite(hi)):
        raise argparse.ArgumentTypeError("expected 0 <= FROM < TO, got %r" % text)
    return lo, hi


def connect_timeout_option(p: argparse.ArgumentParser) -> None:
    """--connect-timeout, for ``sweep`` and ``reproduce`` (issue 17: an unreachable
    --scheduler fails in seconds)."""
    from ..studies import CONNECT_TIMEOUT
    p.add_argument("--connect-timeout", type=cli_number(float, "seconds", lambda v: None if 0 < v <= 3600
                                                        else "must be more than 0 and at most 3600 seconds"),
                   default=CONNECT_TIMEOUT, metavar="SECONDS",
                   help="tcp://HOST:PORT: give up reaching the scheduler after SECONDS (default %g)"
                        % CONNECT_TIMEOUT)

def default_limit() -> int:
    from ..scenario.output import DEFAULT_MEMORY_LIMIT
    return DEFAULT_MEMORY_LIMIT

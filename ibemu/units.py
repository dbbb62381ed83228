"""Units: emulated time in integer picoseconds, IB link rates, and how scenario files
spell times (ps), sizes (bytes) and rates (bytes/s).

Times are strings with ns/us/µs/ms/s (a bare number is refused, except 0); sizes are
integer bytes or strings with B/KB/KiB/MB/MiB (switch buffers also "N packets"); rates
are bytes/s numbers, IB link names (4x_sdr) or strings such as "8Gb/s" and "1GB/s".
Every error is a ValueError whose text the scenario loader puts after the key path.
Bottom layer: imports nothing of ibemu.
"""
from __future__ import annotations

import math
import re
from decimal import Decimal, DecimalException, localcontext
from typing import Any, Final

__all__ = ["PS_PER_NS", "PS_PER_US", "PS_PER_MS", "PS_PER_S", "LANE_DATA_BPS", "WIDTHS", "ib_rate",
           "TIME_UNITS", "SIZE_UNITS", "MAX_TIME_PS", "MAX_SIZE", "MAX_RATE", "MIN_DILATION", "MAX_DILATION",
           "describe", "ascii_digits", "parse_time", "format_time", "parse_size", "parse_bytes", "parse_rate",
           "parse_dilation"]

PS_PER_NS: Final = 1_000
PS_PER_US: Final = 1_000_000
PS_PER_MS: Final = 1_000_000_000
PS_PER_S: Final = 1_000_000_000_000

# data rate after encoding, bytes/s, per lane (IBA 5.x and the IBTA roadmap):
# SDR 2.5 Gb/s 8b/10b, DDR 5, QDR 10 (8b/10b); FDR 14.0625 and EDR 25.78125 Gb/s with
# 64b/66b; HDR 53.125 Gb/s PAM4 with 64b/66b framing after FEC (50 Gb/s data per lane);
# NDR 106.25 Gb/s PAM4 (100 Gb/s data per lane), XDR 200 Gb/s data per lane (IBTA roadmap);
# FDR10 (a Mellanox speed, ibnetdiscover prints it, REFERENCE-FABRICS §1) 10.3125 Gb/s with 64b/66b.
LANE_DATA_BPS = {
    "sdr": 2.5e9 * 8 / 10,
    "ddr": 5e9 * 8 / 10,
    "qdr": 10e9 * 8 / 10,
    "fdr10": 10.3125e9 * 64 / 66,
    "fdr": 14.0625e9 * 64 / 66,
    "edr": 25.78125e9 * 64 / 66,
    "hdr": 50e9,
    "ndr": 100e9,
    "xdr": 200e9,
}
# LinkWidthActive widths (IBA 14.2.5.6 PortInfo; 2x added with HDR)
WIDTHS = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}

# Bounds on every magnitude a scenario or the command line can give (issue 14 Deliver 4), so
# that no value overflows an int64 (the time arrays of ibemu.results.metrics), a float
# (rates and times meet in float arithmetic) or memory before the run's own checks:
# times up to 10^6 s of emulated time (10^18 ps: twice it still fits in an int64), sizes
# up to 1 TiB (10^5 times any switch buffer), rates from 1 byte/s up to 10^15 bytes/s
# (8 Pb/s, 10^4 times a 12x HDR link).
MAX_TIME_PS = 10**18
MAX_SIZE = 2**40
MAX_RATE = 10**15
# --dilation, wall seconds per emulated second.  Below 1 the emulation would have to run
# faster than the hardware it emulates: a worker forwards a datagram in tens of µs of
# Python while a 4x SDR link carries a 2 KiB packet every 2 µs, so a run below 1 only
# falls behind (1e-9 gave 29 events and zero throughput, issue 14).  Above 10^6 a 1 ms
# run takes over 16 minutes of wall time and a 1 ns timer becomes 1 ms, the scheduling
# grain of the workers' event loop: nothing is emulated better, only slower.
MIN_DILATION = 1.0
MAX_DILATION = 1e6


def ib_rate(name: str) -> int:
    """Bytes per second of a link named like ``4x_sdr`` / ``4X SDR`` / ``12x-qdr``."""
    key = name.lower().replace(" ", "_").replace("-", "_")
    width, _, speed = key.partition("_")
    if width not in WIDTHS or speed not in LANE_DATA_BPS:
        raise ValueError("unknown link rate %r (expected e.g. 4x_sdr, 1x_qdr, 12x_edr)" % name)
    return round(WIDTHS[width] * LANE_DATA_BPS[speed] / 8)


_NUM = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"     # ASCII digits only
TIME_UNITS = {"ps": 1, "ns": PS_PER_NS, "us": PS_PER_US, "µs": PS_PER_US, "μs": PS_PER_US,
              "ms": PS_PER_MS, "s": PS_PER_S}
_TIME_RE = re.compile(r"\s*(%s)\s*(ps|ns|us|µs|μs|ms|s)\s*" % _NUM)
SIZE_UNITS = {"b": 1, "byte": 1, "bytes": 1, "kb": 1000, "kib": 1024, "mb": 10**6,
              "mib": 2**20, "gb": 10**9, "gib": 2**30}
_SIZE_RE = re.compile(r"\s*(%s)\s*([A-Za-z]+)\s*" % _NUM)
_RATE_RE = re.compile(r"\s*(%s)\s*([kKMGT]?)(i?)(B|b|bit)(/s|ps)\s*" % _NUM)
_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IB_NAME = re.compile(r"\s*[0-9]+\s*x[\s_-]*[a-z]+(?:10)?\s*", re.I | re.ASCII)


def describe(v: Any) -> str:
    """A TOML value as error messages name it: "integer 3", "string 'x'", "a table"."""
    if isinstance(v, bool):
        return "boolean %s" % str(v).lower()
    if isinstance(v, int):
        return "integer %d" % v
    if isinstance(v, float):
        return "float %r" % v
    if isinstance(v, str):
        return "string %r" % v
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "a table"
    return "a date/time"


def ascii_digits(text: str) -> bool:
    """Whether *text* is one or more ASCII digits 0-9 (``str.isdigit`` also accepts "²" and
    "٣", which ``int()`` then refuses or reads)."""
    return text.isascii() and text.isdigit()


def _decimal(text: str, what: str) -> Decimal:
    try:
        d = Decimal(text)
    except DecimalException:
        raise ValueError("cannot read %s %r" % (what, text)) from None
    if not d.is_finite():
        raise ValueError("%s %r is not a finite number" % (what, text))
    return d


def _scaled(text: str, what: str, mult: int | Decimal, limit: int, bound: str, shown: str) -> Decimal:
    """The number *text* times *mult*, refused (before any arithmetic can overflow or
    build a huge integer) when its magnitude exceeds *limit* (spelled *bound*); *shown*: the
    value as given, for the message."""
    d = _decimal(text, what)
    if d and d.adjusted() > len(str(limit)) + 2:       # far beyond the limit whatever the unit
        raise ValueError("%r is too large (at most %s)" % (shown, bound))
    with localcontext() as ctx:
        ctx.prec = 60                                  # exact for every number the regexes accept
        n = d * mult
    if abs(n) > limit:
        raise ValueError("%r is too large (at most %s)" % (shown, bound))
    return n


def _finite(v: float) -> None:
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("must be a finite number, got %r" % v)


def parse_time(v: Any) -> int:
    """Picoseconds from "40ns", "2.068us", "26 µs", "2ms", "0.1s" (or 0)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        _finite(v)
        if v == 0:
            return 0
        raise ValueError("bare number %r: add a unit, e.g. '%sus' (ns, us, ms or s)" % (v, v))
    if not isinstance(v, str):
        raise ValueError("expected a time such as '40ns' or '2ms', got %s" % describe(v))
    m = _TIME_RE.fullmatch(v)
    if not m:
        raise ValueError("cannot read time %r (expected e.g. '40ns', '26us', '2ms', '0.1s')" % v)
    ps = _scaled(m[1], "time", TIME_UNITS[m[2]], MAX_TIME_PS, "10^6 s", v)
    if ps < 0:
        raise ValueError("must not be negative, got %r" % v)
    if ps != ps.to_integral_value():
        raise ValueError("%r is not a whole number of picoseconds" % v)
    return int(ps)


def format_time(ps: int) -> str:
    """The shortest exact spelling of a time in ps: 100_000_000 -> "100us"."""
    for name, unit in (("s", PS_PER_S), ("ms", PS_PER_MS), ("us", PS_PER_US), ("ns", PS_PER_NS)):
        if ps % unit == 0:
            return "%d%s" % (ps // unit, name)
    return "%dps" % ps


def parse_size(v: Any, packets: bool = False) -> tuple[int | None, int | None]:
    """``(bytes, None)`` or, when ``packets`` is allowed, ``(None, n)`` for "n packets"."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 0:
            raise ValueError("must not be negative, got %d" % v)
        if v > MAX_SIZE:
            raise ValueError("%.4g bytes is too large (at most 1 TiB)" % v)
        return v, None
    if not isinstance(v, str):
        raise ValueError("expected a size such as 2048, '8KiB'%s, got %s"
                         % (" or '4 packets'" if packets else "", describe(v)))
    m = _SIZE_RE.fullmatch(v)
    unit = m[2].lower() if m else ""
    if unit in ("packet", "packets"):
        if not packets:
            raise ValueError("%r: a packet count is only accepted for a switch 'buffer'; "
                             "give bytes, e.g. '8KiB'" % v)
        assert m is not None
        n = _scaled(m[1], "size", 1, MAX_SIZE, "2^40 packets", v)
        if n != n.to_integral_value() or n < 1:
            raise ValueError("%r: the packet count must be a whole number >= 1" % v)
        return None, int(n)
    if not m or unit not in SIZE_UNITS:
        raise ValueError("cannot read size %r (expected e.g. 2048, '2KiB', '8192 bytes'%s)"
                         % (v, ", '4 packets'" if packets else ""))
    n = _scaled(m[1], "size", SIZE_UNITS[unit], MAX_SIZE, "1 TiB", v)
    if n < 0:
        raise ValueError("must not be negative, got %r" % v)
    if n != n.to_integral_value():
        raise ValueError("%r is not a whole number of bytes" % v)
    return int(n), None


def parse_bytes(v: Any) -> int:
    """Bytes from a size such as 2048 or "8KiB" (no packet count; see :func:`parse_size`)."""
    nbytes, _ = parse_size(v)
    assert nbytes is not None           # only a packet count has no bytes
    return nbytes


def parse_rate(v: Any) -> int:
    """Bytes/s from a number, an IB link name ("4x_sdr") or "8Gb/s", "1GB/s", "100MiB/s"."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        _finite(v)
        if v <= 0:
            raise ValueError("must be positive, got %r" % v)
        return _rate_bounds(v, round(v))
    if not isinstance(v, str):
        raise ValueError("expected a rate such as '4x_sdr', '8Gb/s' or bytes/s, got %s" % describe(v))
    if _IB_NAME.fullmatch(v):
        return ib_rate(v.strip())          # its ValueError says which names exist
    m = _RATE_RE.fullmatch(v)
    if not m or (m[3] and m[2] in ("", "k")):
        raise ValueError("cannot read rate %r (expected e.g. 4x_sdr, '8Gb/s', '1GB/s', "
                         "'100MB/s' or bytes/s as a number)" % v)
    mult = 1024 ** " KMGT".index(m[2].upper()) if m[3] else _PREFIX[m[2]]
    rate = _scaled(m[1], "rate", mult, 8 * MAX_RATE, "10^15 bytes/s", v) / (1 if m[4] == "B" else 8)
    if rate <= 0:
        raise ValueError("must be positive, got %r" % v)
    return _rate_bounds(v, int(rate.to_integral_value()))


def _rate_bounds(v: Any, rate: int) -> int:
    """*rate* (bytes/s, read from *v*) if within 1 .. MAX_RATE."""
    if rate < 1:
        raise ValueError("%r is less than 1 byte/s" % (v,))
    if rate > MAX_RATE:
        raise ValueError("%.4g bytes/s is too large (at most 10^15 bytes/s)" % rate)
    return rate


def parse_dilation(text: Any) -> float:
    """``--dilation``: wall seconds per emulated second, a finite number in
    [MIN_DILATION, MAX_DILATION] (the reasons are at those constants)."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise ValueError("expected a number, got %r" % text) from None
    if not math.isfinite(v):
        raise ValueError("must be a finite number, got %r" % text)
    if v <= 0:
        raise ValueError("must be positive, got %r" % text)
    if not MIN_DILATION <= v <= MAX_DILATION:
        raise ValueError("must be between %g and %g (wall seconds per emulated second; below 1 the "
                         "workers cannot keep up, above 10^6 nothing is gained), got %r"
                         % (MIN_DILATION, MAX_DILATION, text))
    return v

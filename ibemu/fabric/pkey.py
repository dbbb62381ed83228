"""Partition keys (IBA 10.9): a port's P_Key table and the matching rule.

A P_Key is 16 bits: bit 15 is the membership type (1 full, 0 limited), bits 14:0 the
partition number.  Two P_Keys match when their partition numbers are equal, at least
one of them is a full member, and neither is invalid (partition number 0: 0x0000 and
0x8000).  A packet is accepted by a port when its BTH P_Key matches an entry of the
port's table (IBA 10.9).  HCA ports always check; switch ports only with
inbound partition enforcement on.  A rejected packet is dropped and counted in
PortRcvConstraintErrors (issue 8 item 5).

The default table holds the default partition, 0xFFFF, which every ibemu packet carries
unless its flow says otherwise.
"""
from __future__ import annotations

from collections.abc import Iterable

DEFAULT_PKEY = 0xFFFF


def pkey_valid(pkey: int) -> bool:
    return (pkey & 0x7FFF) != 0


def pkey_match(a: int, b: int) -> bool:
    """IBA 10.9: same partition, not both limited members, neither invalid."""
    return ((a & 0x7FFF) == (b & 0x7FFF) and (a & 0x7FFF) != 0
            and bool((a | b) & 0x8000))


class PKeyTable:
    """A port's P_Key table; :meth:`allows` is memoised (it runs for every packet): the
    last P_Key asked about is answered from two fields, any other from a dict."""
    __slots__ = ("keys", "_cache", "_last", "_last_ok")

    def __init__(self, keys: Iterable[int] | None = None) -> None:
        self.keys = tuple(keys) if keys is not None else (DEFAULT_PKEY,)
        self._cache: dict[int, bool] = {}
        self._last = -1                     # the last P_Key asked about (-1: none yet)
        self._last_ok = False

    def allows(self, pkey: int) -> bool:
        # nearly every packet carries the P_Key of the one before it (the default
        # partition): compiled, the fields cost a compare, the dict a lookup of a boxed
        # int above the small-int cache (issue 28)
        if pkey == self._last:
            return self._last_ok
        ok = self._cache.get(pkey)
        if ok is None:
            ok = self._cache[pkey] = any(pkey_match(pkey, k) for k in self.keys)
        self._last = pkey
        self._last_ok = ok
        return ok

    def __repr__(self) -> str:
        return "PKeyTable(%s)" % ", ".join("0x%04x" % k for k in self.keys)

"""The address map: which UDP address every emulated port uses (issue 4 items 2 and 6).

A TOML file, one line per wired port of the fabric::

    # ibemu address map
    [ports]
    "A:1" = "127.0.0.1:18600"       # node A, port 1
    "B:1" = "10.0.0.2:18601"

The controller writes one for its workers; for nodes on several machines,
``ibemu node SCENARIO --make-map FILE --place NODES=HOST ...`` writes one that every
machine then uses with ``ibemu node SCENARIO --map FILE --nodes ...``.  Ports are handed
out from 18600 (``ibemu.wire.shim.DEFAULT_PORT_BASE``), the range the Scapy layer and
the Wireshark plugin recognise.

The key file (issue 14 item 1): the run's secret that authenticates every datagram
(:mod:`ibemu.runtime.delivery`), 32 random bytes in hex on one line.  ``--make-map FILE``
writes a fresh one beside the map (``FILE.key``, mode 0600) and every host's
``ibemu node`` reads it (``--key``, default the map's path plus ``.key``); copy it to the
other hosts as securely as any secret (scp).  A key file that its group or others may
read, or that is not a regular file, is refused (:func:`read_key`).
"""
from __future__ import annotations

import os
import secrets
import stat
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import atomic_write_text
from ..errors import UserError

if TYPE_CHECKING:
    from ..fabric.network import Fabric

PortKey = tuple[str, int]
"""(node name, port number)."""
Address = tuple[str, int]
"""(host, UDP port)."""
AddressMap = dict[PortKey, Address]


def port_keys(fabric: Fabric) -> list[PortKey]:
    """Every wired (node name, port) of *fabric*, in a fixed order (nodes as built,
    ports ascending)."""
    keys: list[PortKey] = []
    names = {id(n): name for name, n in fabric.nodes.items()}
    wired = {(names[id(node)], port) for (node, port) in fabric.wiring}
    for name, node in fabric.nodes.items():
        for p in sorted(node.ports):
            if (name, p) in wired:
                keys.append((name, p))
    return keys


def assign(fabric: Fabric, host_of: Callable[[str], str], base: int) -> AddressMap:
    """``(node, port) -> (host, udp port)``: consecutive ports from *base*;
    *host_of(node name)* gives each node's host address."""
    return {key: (host_of(key[0]), base + i) for i, key in enumerate(port_keys(fabric))}


def link_labels(fabric: Fabric) -> dict[PortKey, str]:
    """The directed link each wired port sends on: (node, port) -> label."""
    return {(a, pa): label for label, (a, pa, _b, _pb) in fabric.link_ends.items()}


def write_map(path: str | Path, amap: Mapping[PortKey, Address], labels: Mapping[PortKey, str] | None = None) -> None:
    """Write the map; with *labels* ((node, port) -> directed link, :func:`link_labels`),
    each line ends with ``# link LABEL``, which the Wireshark plugin reads to show a live
    capture's links (issue 18 item 1)."""
    lines = ["# ibemu address map: \"node:port\" = \"host:udp port\"", "[ports]"]
    for (node, port), (host, udp) in amap.items():
        label = (labels or {}).get((node, port))
        lines.append('"%s:%d" = "%s:%d"' % (node, port, host, udp) + ("   # link %s" % label if label else ""))
    text = "\n".join(lines) + "\n"
    p = Path(path)
    if p.exists() and not p.is_file():          # e.g. /dev/stdout
        p.write_text(text, encoding="utf-8")
    else:
        atomic_write_text(p, text)              # a reader never sees half a map


def _split(text: str, what: str, path: str | Path) -> tuple[str, int]:
    name, sep, num = text.rpartition(":")
    if not sep or not name or not num.isdigit():
        raise UserError("%s: %s %r: expected NAME:NUMBER" % (path, what, text))
    return name, int(num)


def read_map(path: str | Path, fabric: Fabric | None = None) -> AddressMap:
    """Read an address map; with *fabric*, check that it covers every wired port."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError("cannot read address map %s: %s" % (path, e.strerror)) from None
    except tomllib.TOMLDecodeError as e:
        raise UserError("address map %s: %s" % (path, e)) from None
    ports = raw.get("ports")
    if not isinstance(ports, dict):
        raise UserError("address map %s: no [ports] table" % path)
    amap: AddressMap = {}
    for key, val in ports.items():
        if not isinstance(val, str):
            raise UserError("address map %s: %s: expected \"host:port\", got %r" % (path, key, val))
        node, port = _split(key, "key", path)
        host, udp = _split(val, "address", path)
        if not 0 < udp < 65536:
            raise UserError("address map %s: %s: UDP port %d out of range" % (path, key, udp))
        amap[(node, port)] = (host, udp)
    if fabric is not None:
        missing = [k for k in port_keys(fabric) if k not in amap]
        if missing:
            raise UserError("address map %s has no address for %s" % (
                path, ", ".join("%s:%d" % k for k in missing[:5]) + (" ..." if len(missing) > 5 else "")))
    return amap


KEY_BYTES = 32
"""Bytes of a run's secret (:data:`ibemu.wire.shim.KEY_LEN`)."""


def new_key() -> bytes:
    """A fresh run secret from the operating system's random source."""
    return secrets.token_bytes(KEY_BYTES)


def key_path(map_path: str | Path) -> Path:
    """The default key file of an address map: its path plus ``.key``."""
    return Path(str(map_path) + ".key")


def write_key(path: str | Path, key: bytes) -> None:
    """Write *key* (hex) to *path*, created with owner-only permissions (0600); an
    existing file is replaced."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp%d" % os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(key.hex() + "\n")
        os.replace(tmp, p)
    except OSError as e:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise UserError("cannot write key file %s: %s" % (path, e.strerror or e)) from None


def read_key(path: str | Path) -> bytes:
    """The run secret in key file *path*.  Refused, in one line: a file its group or
    others may read or write (the secret would not be one), one that is not a regular
    file, or anything but 32 to 64 bytes in hex."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise UserError("cannot read key file %s: %s" % (path, e.strerror or e)) from None
    with os.fdopen(fd, "r", encoding="ascii", errors="replace") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise UserError("key file %s: not a regular file" % path)
        if st.st_mode & 0o077:
            raise UserError("key file %s is accessible to group or others (mode %03o): it must be "
                            "owner-only (chmod 600 %s)" % (path, stat.S_IMODE(st.st_mode), path))
        text = f.read(1024).strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if not 16 <= len(key) <= 64:
        raise UserError("key file %s: expected 32 to 128 hex digits on one line" % path)
    return key

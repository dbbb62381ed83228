"""UDP sockets of the emulated ports (issue 4 item 1): one per node port, bound to its
address from the address map, non-blocking.

Security (issue 8 item 5): the address map puts every port on 127.0.0.1 unless it says
otherwise (``ibemu node --make-map --place``), so by default nothing outside the machine
can reach the emulation.  The sockets are deliberately *not* connected: a connected UDP
socket makes the kernel drop datagrams from any other address silently, uncounted; an
unconnected one receives them, and the runtime checks every datagram's source against
the port's configured peer and drops *and counts* strangers (``strangers`` in the run's
results; :mod:`ibemu.runtime.loop`).  Frames go out with ``sendto`` to the peer's
numeric address, resolved once here (:func:`resolve`).

Receive buffers are sized from the credits (:func:`rcvbuf_bytes`): a link can never
carry more data than the receiving port's buffer grants (IBA credit flow control), plus
the small link packets and ACKs that travel with it, so a socket buffer that holds that
much cannot overflow -- datagram loss in a healthy run is zero, and counted when not.
"""
from __future__ import annotations

import errno
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import UserError
from ..wire.shim import SHIM_LEN

if TYPE_CHECKING:
    from ..fabric.node import Port

# What the kernel charges a socket buffer for one queued loopback datagram (skb
# "truesize"): about 4.5 KiB for a 2 KiB frame, under 1 KiB for a link packet.
_TRUESIZE_BIG = 4608
_TRUESIZE_SMALL = 1024
MIN_RCVBUF = 256 * 1024


def rcvbuf_bytes(port: Port) -> int:
    """SO_RCVBUF for a :class:`~ibemu.fabric.node.Port`: its receive buffer in credits
    (every VL), each max-size packet at the kernel's cost, plus as many link packets
    and management packets again, doubled for margin; at least 256 KiB."""
    blocks = sum(rx.capacity for rx in port.rx)
    packets = max(1, blocks * 64 // 2048 + 1)
    need = 2 * (packets * _TRUESIZE_BIG + 4 * packets * _TRUESIZE_SMALL + 64 * _TRUESIZE_SMALL)
    return max(MIN_RCVBUF, need)


def _set_rcvbuf(sock: socket.socket, nbytes: int) -> int:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, nbytes)
    except OSError:
        pass
    got: int = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2    # the kernel doubles it
    if got < nbytes and hasattr(socket, "SO_RCVBUFFORCE"):
        try:                                    # above net.core.rmem_max: needs CAP_NET_ADMIN
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUFFORCE, nbytes)
            got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2
        except OSError:
            pass
    return got


def resolve(addr: tuple[str, int]) -> tuple[str, int]:
    """(host, port) with the host as the numeric IPv4 address ``recvfrom`` reports (the
    address map may name hosts)."""
    host, port = addr
    try:
        ip = socket.gethostbyname(host)         # numeric addresses are not looked up
    except OSError as e:
        raise UserError("cannot resolve host %r of the address map: %s" % (host, e.strerror or e)) from None
    if ip == "0.0.0.0":                         # bound to every address: on one host it
        ip = "127.0.0.1"                        # sends to us from the loopback address
    return ip, int(port)


def open_port_socket(addr: tuple[str, int], peer: object = None,
                     rcvbuf: int | None = None) -> socket.socket:
    """A non-blocking UDP socket bound to *addr* ((host, port)).  Not connected (see the
    module text); *peer* is unused and kept for callers of the earlier signature."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        if rcvbuf:
            _set_rcvbuf(sock, rcvbuf)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        try:
            sock.bind(tuple(addr))
        except OSError as e:
            raise UserError("cannot bind UDP %s:%d: %s" % (addr[0], addr[1], e.strerror or e)) from None
    except BaseException:
        sock.close()
        raise
    return sock


def ports_free(host: str, ports: Iterable[int]) -> bool:
    """True when every UDP port in *ports* can be bound on *host* now."""
    held = []
    try:
        for p in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            held.append(s)
            try:
                s.bind((host, p))
            except OSError as e:
                if e.errno in (errno.EADDRINUSE, errno.EACCES):
                    return False
                raise
        return True
    finally:
        for s in held:
            s.close()


def free_port_block(host: str, count: int, base: int, limit: int = 65535) -> int:
    """The first base >= *base* (in steps of *count*) whose *count* ports are all free."""
    b = base
    while b + count <= limit:
        if ports_free(host, range(b, b + count)):
            return b
        b += count
    raise UserError("no block of %d free UDP ports from %d on %s" % (count, base, host))


MAX_DATAGRAM = SHIM_LEN + 4096 + 128

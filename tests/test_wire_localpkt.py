"""ibemu.wire.localpkt: the compiled core's builder of IBA local packets makes, for every
packet it takes, the bytes of codec.build's general path, and leaves the others to it.

The compiled core takes it; here it runs interpreted, with ``codec._NATIVE`` set as the
compiled core has it, against build with it unset (the general path: struct, zlib, the
Scapy-checked codec of tests/test_codec_vs_layers.py).  The packets are random over every
OpCode of Table 38 and a few unknown ones, fields in range and now and then past their
bits (struct takes some: M 2 bits, BECN 2; build masks others), payloads the shared zero
ones (read by table) or not, of lengths with every PadCnt, and forced PktLen, PadCnt,
ICRC and VCRC.  tests/test_compiled.py compares compiled and pure-Python runs whole.
"""
from __future__ import annotations

import random

import pytest

from ibemu.wire import codec, crc
from ibemu.wire.opcodes import OPCODES

FIELDS = {"AETH": {"syndrome": 8, "msn": 24}, "RETH": {"va": 64, "r_key": 32, "dma_len": 32},
          "DETH": {"q_key": 32, "src_qp": 24}, "ImmDt": {"immdt": 32}}
BITS = {"psn": 24, "destqp": 24, "vl": 4, "lver": 4, "sl": 4, "pkey": 16, "fecn": 1, "becn": 1,
        "ackreq": 1, "se": 1, "m": 1, "tver": 4}


def _value(rng: random.Random, bits: int, wild: bool) -> int:
    if wild and rng.random() < 0.15:
        return rng.choice([-1, 1 << bits, 3, 1 << 63, 1 << 64, 1 << 70, -(1 << 65)])
    return rng.choice([0, (1 << bits) - 1, rng.randrange(1 << bits)])


def _packet(rng: random.Random) -> dict:
    wild = rng.random() < 0.2
    kw = {"dlid": _value(rng, 16, wild), "slid": _value(rng, 16, wild),
          "opcode": rng.choice([*OPCODES, 0x15, 0x7F, 0xFF])}
    kw.update({k: _value(rng, b, wild) for k, b in BITS.items() if rng.random() < 0.8})
    n = rng.choice([0, 1, 2, 3, 4, 5, 255, 1021, 2048, 4096, rng.randrange(5000)])
    kw["payload"] = codec.zero_payload(n) if rng.random() < 0.6 else rng.randbytes(n)
    if rng.random() < 0.9:
        kw["ext"] = {name: {f: _value(rng, b, wild) for f, b in fs.items() if rng.random() < 0.9}
                     for name, fs in FIELDS.items() if rng.random() < 0.8}
    for key, bits in (("padcnt", 2), ("pktlen", 11), ("icrc", 32), ("vcrc", 16)):
        if rng.random() < 0.05:
            kw[key] = _value(rng, bits, wild)
    return kw


def _outcome(kw: dict) -> bytes | str:
    try:
        return bytes(codec.build(**kw))
    except Exception as e:
        return type(e).__name__


def test_build_local_makes_the_general_paths_bytes(monkeypatch):
    if crc.COMPILED:
        pytest.skip("compiled, build calls build_local natively: tests/test_compiled.py compares the two")
    taken = []
    build_local = codec.build_local

    def counted(*args):
        frame = build_local(*args)
        taken.append(frame is not None)
        return frame

    monkeypatch.setattr(codec, "build_local", counted)
    rng = random.Random(28)
    for _ in range(4000):
        kw = _packet(rng)
        monkeypatch.setattr(codec, "_NATIVE", False)
        want = _outcome(kw)
        monkeypatch.setattr(codec, "_NATIVE", True)
        assert _outcome(kw) == want, kw
    assert sum(taken) > 1000 and not all(taken)


@pytest.mark.parametrize("opcode, ext", [
    (0x01, None),                                                       # RC SEND MIDDLE
    (0x06, {"RETH": {"va": 0, "r_key": 0, "dma_len": 1 << 20}}),        # RC RDMA WRITE FIRST
    (0x0C, {"RETH": {"va": 4096, "r_key": 7, "dma_len": 4096}}),        # RC RDMA READ REQUEST
    (0x11, {"AETH": {"syndrome": 0x1F, "msn": 5}}),                     # RC ACKNOWLEDGE
    (0x10, {"AETH": {"syndrome": 0x1F, "msn": 5}}),                     # RC RDMA READ RESPONSE ONLY
    (0x64, {"DETH": {"q_key": 0x80010000, "src_qp": 1}}),              # UD SEND ONLY
    (0x80, None),                                                       # CNP
])
def test_the_packets_hcas_send_take_build_local(opcode, ext):
    for n in (0, 1, 2048):
        kw = dict(dlid=300, slid=17, opcode=opcode, psn=12345, destqp=0x1234, pkey=0xFFFF, ackreq=1,
                  becn=1, payload=codec.zero_payload(n), ext=ext)
        frame = codec.build_local(300, 17, opcode, 12345, 0x1234, 0, 0, 0, 0xFFFF, 0, 1, 1, 0, 0, 0,
                                  (-n) & 3, kw["payload"], True, ext, None, None, None)
        assert frame is not None and frame == codec.build(**kw)

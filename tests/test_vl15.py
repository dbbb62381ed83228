"""VL15 (management) is not flow controlled and has priority (seed 004 "Virtual Lanes")."""
from ibemu.fabric.node import Port
from ibemu.fabric.params import SwitchParams
from ibemu.fabric.switch import Switch
from ibemu.wire.codec import build
from ibemu.wire.linkpkt import build_link


def _switch():
    sw = Switch("S", SwitchParams(), {5: 2})
    for i in (1, 2, 3):
        sw.add_port(Port(i, 10**9, 0, 1, 132, "p%d" % i, 10**12))
    return sw


def test_vl15_crosses_a_switch_without_credits():
    sw = _switch()                                   # no flow-control packet: no credit anywhere
    mad = build(dlid=5, slid=1, opcode=0x64, vl=15, payload=bytes(256), ext={"DETH": {}})
    data = build(dlid=5, slid=1, opcode=0x04, vl=0, payload=bytes(256))
    sw.receive(1, data, False, 0)
    sw.receive(3, mad, False, 10)
    sw.wake(10**6)
    sent = [f for p, f, link, t in sw.outbox if not link and p == 2]
    assert sent == [mad]                             # the data packet waits for credit
    assert sw.ports[1].rx[0].used > 0                # data holds its input buffer
    assert sw.ports[3].rx[0].used == 0               # VL15 took no credit
    assert sw.ports[2].tx[0].fctbs == 0              # and consumed none downstream


def test_vl15_goes_before_waiting_data():
    sw = _switch()
    sw.receive(2, build_link(1, 0, 0, 132), True, 0)  # credits for port 2
    sw.outbox.clear()
    first = build(dlid=5, slid=1, opcode=0x04, vl=0, payload=bytes(2048))
    second = build(dlid=5, slid=1, opcode=0x04, vl=0, payload=bytes(2048))
    mad = build(dlid=5, slid=1, opcode=0x64, vl=15, payload=bytes(256), ext={"DETH": {}})
    sw.receive(1, first, False, 0)
    sw.wake(100_000)                                 # first starts at 40 ns
    sw.receive(3, second, False, 200_000)
    sw.receive(1, mad, False, 300_000)
    sw.wake(10**8)
    order = [f for p, f, link, t in sw.outbox if not link and p == 2]
    assert order[0] is first and order[1] is mad and order[2] is second

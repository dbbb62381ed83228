"""Switch marking of the HP scheme (ibemu.cc.hp.marking): every rule of seed 003 §5 and
seed 000 §4, §6.1, driven by hand on a stand-in switch (ports with real credit
counters, real frames and switch entries)."""
from __future__ import annotations

import pytest

from ibemu.cc.hp.config import HPSpec
from ibemu.cc.hp.marking import HPMarker
from ibemu.fabric.credits import CreditRx, CreditTx, blocks_of
from ibemu.fabric.xport import Entry
from ibemu.wire import codec
from ibemu.wire import opcodes as OP

PKT = 2048 + 26
B = blocks_of(PKT)                   # 33 blocks: also the maximum-size packet here
IN1, IN2, IN3, OUT, OUT2 = 1, 2, 3, 5, 6


class Port:
    def __init__(self, packets=4):
        self.rx = [CreditRx(packets * B)]
        self.tx = [CreditTx()]
        self.tx[0].update(2000)       # plenty of credits


class FakeSwitch:
    """What HPMarker touches of a Switch: ports (rx/tx credits), queues, at, count."""

    def __init__(self, packets=4):
        self.ports = {p: Port(packets) for p in (IN1, IN2, IN3, OUT, OUT2)}
        self.queues = {p: [[]] for p in self.ports}
        self.timers = []
        self.counters = {}

    def at(self, t, fn, *args):
        self.timers.append((t, fn, args))

    def count(self, name, v=1):
        self.counters[name] = self.counters.get(name, 0) + v

    def run_timers(self):
        timers, self.timers = sorted(self.timers, key=lambda x: x[0]), []
        for t, fn, args in timers:
            fn(t, *args)


def frame(opcode=OP.RC_SEND_ONLY, fecn=0):
    payload = bytes(2048) if OP.is_data(opcode) else b""
    ext = {"AETH": {"syndrome": 0x1F, "msn": 0}} if opcode == OP.RC_ACKNOWLEDGE else None
    return codec.build(dlid=9, slid=1, opcode=opcode, psn=0, destqp=5, payload=payload, ext=ext, fecn=fecn)


class Rig:
    def __init__(self, packets=4, **spec):
        self.sw = FakeSwitch(packets)
        self.m = HPMarker(HPSpec(**spec), B)
        self.now = 0

    def arrive(self, inp, out=OUT, opcode=OP.RC_SEND_ONLY):
        f = frame(opcode)
        e = Entry(f, inp, 0, out, 0, blocks_of(len(f)), self.now, self.now + 2_000_000, OP.is_data(opcode))
        assert self.sw.ports[inp].rx[0].received(e.blocks)
        self.sw.queues[out][0].append(e)
        self.m.on_arrival(self.sw, e, self.now)
        self.now += 10
        return e

    def tails(self):
        self.sw.run_timers()

    def send(self, e):
        self.sw.queues[e.out][0].remove(e)
        self.sw.ports[e.out].tx[0].sent(e.blocks)
        self.m.on_transmit(self.sw, e, self.now)
        return codec.get_fecn(e.frame)

    def leave(self, e):
        self.sw.ports[e.inp].rx[0].freed(e.blocks)
        self.m.on_departure(self.sw, e, self.now)


def fecn(e):
    return codec.get_fecn(e.frame)


# ---------------------------------------------------------------- naive
def test_naive_marks_all_data_packets_of_a_full_buffer_only():
    r = Rig(marking="naive")
    a = [r.arrive(IN1) for _ in range(3)]
    other = r.arrive(IN2)
    r.tails()
    assert not any(fecn(e) for e in a + [other])        # 3 of 4 slots: not full
    a.append(r.arrive(IN1))
    r.tails()
    assert all(fecn(e) for e in a)                       # full: every packet in it
    assert not fecn(other)                               # other buffers untouched
    assert r.sw.counters["hp_full_buffers"] == 1


def test_full_means_no_room_for_a_maximum_size_packet_when_the_tail_arrives():
    # a 4-packet buffer holding 3 packets and a small one: 3*33+1 blocks, 31 free < 33 => full
    r = Rig(marking="naive")
    a = [r.arrive(IN1) for _ in range(3)]
    small = r.arrive(IN1, opcode=OP.RC_ACKNOWLEDGE)
    r.tails()
    assert all(fecn(e) for e in a) and not fecn(small)  # never an ACK


def test_a_packet_already_being_forwarded_is_not_marked_but_holds_its_credits():
    r = Rig(marking="naive")
    a = [r.arrive(IN1) for _ in range(4)]
    assert not r.send(a[0])                              # cut through before the 4th tail
    r.tails()
    assert not fecn(a[0]) and all(fecn(e) for e in a[1:])   # full in credits


def test_full_waiting_counts_only_packets_not_yet_forwarded():
    r = Rig(marking="naive", full="waiting")
    a = [r.arrive(IN1) for _ in range(4)]
    r.send(a[0])
    r.tails()
    assert not any(fecn(e) for e in a)                   # 3 waiting: room for one more


def test_acks_and_cnps_are_never_marked():
    r = Rig(marking="naive", packets=3)
    acks = [r.arrive(IN1, opcode=OP.RC_ACKNOWLEDGE) for _ in range(2)]
    d = [r.arrive(IN1), r.arrive(IN1)]
    cnp = r.arrive(IN2, opcode=OP.CNP)
    r.tails()
    assert all(fecn(e) for e in d)
    assert not any(fecn(e) for e in acks + [cnp])
    assert not r.send(cnp)


# ---------------------------------------------------------------- input-triggered
def test_input_triggered_marks_the_next_cnt1_packets_to_leave_on_the_congested_output():
    r = Rig(marking="input")
    local = [r.arrive(IN2), r.arrive(IN3)]              # other inputs, same output
    elsewhere = r.arrive(IN3, out=OUT2)                 # not congested
    remote = [r.arrive(IN1) for _ in range(4)]          # fills IN1
    assert r.m.cnt1[(OUT, 0)] == 6
    r.tails()
    assert r.m.cnt2[(OUT, 0)] == 6                      # cnt2 = cnt1 at the trigger
    assert not any(fecn(e) for e in local + remote)     # marked at transmission, not before
    late = r.arrive(IN2)                                # arrives after the trigger
    order = [remote[0], local[1], late, remote[1], local[0], remote[2], remote[3]]
    marks = [r.send(e) for e in order]
    assert marks == [1, 1, 1, 1, 1, 1, 0]               # the first six to leave, whoever
    assert not r.send(elsewhere)
    assert r.m.cnt2[(OUT, 0)] == 0
    assert r.m.cnt1[(OUT, 0)] == 7                      # sent, but still in the switch
    for e in order:
        r.leave(e)
    assert r.m.cnt1[(OUT, 0)] == 0                      # "decremented as packets ... leave"


def test_cnt1_counts_a_packet_until_its_last_byte_has_left_the_switch():
    # seed 003 §5: "cnt1 is incremented and decremented as packets enter and leave the
    # switch"; the packet being sent cannot be marked, so the trigger marks one more
    r = Rig(marking="input")
    first = r.arrive(IN2)
    assert not r.send(first)                            # being sent: still in the switch
    assert r.m.cnt1[(OUT, 0)] == 1
    remote = [r.arrive(IN1) for _ in range(4)]          # fills IN1
    r.tails()
    assert r.m.cnt2[(OUT, 0)] == 5                      # 4 waiting + the one being sent
    r.leave(first)
    assert r.m.cnt1[(OUT, 0)] == 4 and r.m.cnt2[(OUT, 0)] == 5
    late = r.arrive(IN3)
    assert [r.send(e) for e in remote + [late]] == [1] * 5


def test_input_triggered_treats_every_output_of_the_full_buffer_as_congested():
    r = Rig(marking="input")
    a = [r.arrive(IN1), r.arrive(IN1, out=OUT2), r.arrive(IN1), r.arrive(IN1)]
    r.tails()
    assert r.m.cnt2 == {(OUT, 0): 3, (OUT2, 0): 1}
    assert [r.send(e) for e in a] == [1, 1, 1, 1]


def test_input_triggered_ignores_acks_in_the_counters():
    r = Rig(marking="input", packets=2)
    ack = r.arrive(IN2, opcode=OP.RC_ACKNOWLEDGE)
    a = [r.arrive(IN1), r.arrive(IN1)]
    r.tails()
    assert r.m.cnt2[(OUT, 0)] == 2
    assert not r.send(ack)
    assert r.send(a[0]) and r.send(a[1])


# ---------------------------------------------------------------- output-triggered
def test_output_triggered_when_waiting_packets_exceed_the_threshold():
    r = Rig(marking="input-output", output_threshold=4)
    a = [r.arrive(p) for p in (IN1, IN2, IN3, IN2)]     # 4 in the switch: not above 4
    assert r.m.cnt2.get((OUT, 0), 0) == 0
    a.append(r.arrive(IN3))                             # 5 > 4
    assert r.m.cnt2[(OUT, 0)] == 5
    assert r.sw.counters["hp_output_triggers"] == 1
    assert [r.send(e) for e in a[:2]] == [1, 1]         # 3 still to mark
    for e in a[:2]:
        r.leave(e)                                      # 3 left in the switch
    b = [r.arrive(IN1), r.arrive(IN2)]                  # 5 again: no trigger at 4, one at 5
    assert r.sw.counters["hp_output_triggers"] == 2 and r.m.cnt2[(OUT, 0)] == 5
    assert [r.send(e) for e in a[2:] + b] == [1] * 5


def test_output_threshold_is_per_output():
    r = Rig(marking="input-output", output_threshold=2)
    for p in (IN1, IN2):
        r.arrive(p)
        r.arrive(p, out=OUT2)
    assert not r.m.cnt2.get((OUT, 0)) and not r.m.cnt2.get((OUT2, 0))


# ---------------------------------------------------------------- seed 000 §4 refinements
def test_root_only_while_it_has_credits():
    r = Rig(marking="input", root_needs_credits=True)
    r.sw.ports[OUT].tx[0] = CreditTx()                  # blocked: no credits at all
    r.arrive(IN2)
    [r.arrive(IN1) for _ in range(4)]
    r.tails()
    assert r.m.cnt2.get((OUT, 0), 0) == 0               # the root is downstream


def test_root_decision_is_revoked_when_credits_run_out():
    r = Rig(marking="input", root_needs_credits=True)
    tx = r.sw.ports[OUT].tx[0]
    tx.fccl = 2 * B                                      # credits for two packets
    a = [r.arrive(IN1) for _ in range(4)]
    r.tails()
    assert r.m.cnt2[(OUT, 0)] == 4
    assert r.send(a[0])                                  # marked; one packet of credit left
    assert r.m.cnt2[(OUT, 0)] == 3
    assert r.send(a[1])                                  # marked, and now out of credit
    assert r.m.cnt2[(OUT, 0)] == 0                       # revoked
    assert r.sw.counters["hp_root_revoked"] == 1
    tx.fccl = 2000
    assert not r.send(a[2]) and not r.send(a[3])         # the remainder goes unmarked


def test_propagating_marks_the_full_buffer_even_for_a_blocked_output():
    r = Rig(marking="input", root_needs_credits=True, propagating=True)
    r.sw.ports[OUT].tx[0] = CreditTx()
    other = r.arrive(IN2)
    a = [r.arrive(IN1) for _ in range(4)]
    r.tails()
    assert all(fecn(e) for e in a)                       # propagating packets
    assert not fecn(other)                               # no root here: not generating


def test_mark_blocked_outputs_towards_a_noncompliant_switch():
    sw_spec = dict(marking="input", mark_blocked_for_noncompliant=True)
    r = Rig(**sw_spec)
    r.m = HPMarker(HPSpec(**sw_spec), B, nc_peer_ports=[OUT])
    tx = r.sw.ports[OUT].tx[0]
    tx.fccl = B                                          # room for one packet
    a = [r.arrive(IN1), r.arrive(IN2)]
    assert not r.send(a[0])                              # sent; now blocked
    assert fecn(a[1])                                    # waiting one marked at once
    late = r.arrive(IN3)
    assert fecn(late)                                    # and arrivals while blocked
    b = r.arrive(IN3, out=OUT2)
    assert not fecn(b)                                   # a compliant neighbour: no


def test_already_marked_packets_do_not_notify_twice():
    seen = []
    r = Rig(marking="naive", packets=2)
    r.m.notify = lambda sw, f, now: seen.append(now)
    a = r.arrive(IN1)
    codec.set_fecn(a.frame)                              # marked upstream
    r.arrive(IN1)
    r.tails()
    assert len(seen) == 1                                # only the newly marked one


@pytest.mark.parametrize("marking", ["naive", "input", "input-output"])
def test_marking_sets_fecn_and_keeps_the_frame_valid(marking):
    extra = {"output_threshold": 1} if marking == "input-output" else {}
    r = Rig(marking=marking, packets=2, **extra)
    a = [r.arrive(IN1), r.arrive(IN1)]
    r.tails()
    for e in a:
        r.send(e)
        p = codec.parse(e.frame)
        assert p.fecn == 1 and p.becn == 0
        assert codec.vcrc_ok(e.frame) and codec.icrc_ok(e.frame)

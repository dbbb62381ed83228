"""One-way latency through k switches (k = 1 and 3), cut-through and store-and-forward,
at one link rate and across rates (SDR -> QDR, QDR -> SDR, SDR host -> QDR core -> SDR
host); and causality: no response leaves a receiver before the request's last byte
has arrived there (checked on the recorder's exact times and on a pcap capture).

First principles (seed 003 Table 1: 40 ns forwarding delay; IBA 4X SDR 1e9 B/s, QDR
4e9 B/s).  A packet of n bytes takes T_i = n / r_i on hop i (link i, rate r_i), and
every link has propagation p.  Let E_i be the time its last byte leaves the sender of
hop i (H_i = E_i - T_i its first byte).  The source sends at H_0 = 0, E_0 = T_0.  A
switch between hop i-1 and hop i, with forwarding delay d:

- store-and-forward: starts once the last byte is in, plus d:
  ``H_i = E_{i-1} + p + d``, so ``E_i = E_{i-1} + p + d + T_i``;
- cut-through: starts d after the first byte arrived, ``H_i >= H_{i-1} + p + d``,
  but it cannot finish before the last byte has arrived, plus d -- a switch that sends
  faster than it receives would underrun (run out of bytes mid-packet):
  ``E_i >= E_{i-1} + p + d``.  So ``E_i = max(H_{i-1} + p + d + T_i, E_{i-1} + p + d)``.
  At one rate the two terms are equal; from slow to fast the second decides.

The last byte reaches the destination at E_k + p: the one-way latency (first byte sent
to last byte delivered) is E_k + p - H_0.  The ACK (a response) cannot leave the
destination before that.

The cases with a slower link before a faster one in cut-through mode fail on the
current main (issue 13 defect 1: the receiver computes the last byte's arrival from
its own, faster link); the lead is fixing it.
"""
from __future__ import annotations

import functools

import pytest

from ibemu.build import build_fabric
from ibemu.capture.erf import read_erf_pcap
from ibemu.fabric.params import FlowSpec, HCAParams, SwitchParams
from ibemu.run import run_virtual
from ibemu.units import PS_PER_NS, PS_PER_S, PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP

from .harness import BASE, FORWARDING_DELAY, QDR, SDR, Path, scenario, simulate

START = 1 * PS_PER_US           # the message is posted at 1 us (credits are in by then)
PROP = 20 * PS_PER_NS           # propagation of every link in these paths

PATHS = {                       # hop rates from the source to the destination
    "k1-sdr": [SDR, SDR],
    "k1-sdr-qdr": [SDR, QDR],   # slower -> faster
    "k1-qdr-sdr": [QDR, SDR],   # faster -> slower
    "k3-sdr": [SDR, SDR, SDR, SDR],
    "k3-qdr": [QDR, QDR, QDR, QDR],
    "k3-sdr-qdr-sdr": [SDR, QDR, QDR, SDR],     # SDR host -> QDR core -> SDR host
    "k3-qdr-sdr": [QDR, QDR, QDR, SDR],         # faster -> slower at the last switch only
}
MODES = {"cut-through": True, "store-and-forward": False}
CASES = [(path, mode, payload) for path in PATHS for mode in MODES for payload in (2048,)]
CASES += [("k1-sdr-qdr", mode, 64) for mode in MODES]          # the reproduction


def t(nbytes: int, rate: int) -> int:
    """Serialisation time in ps (exact for these rates: 1000 ps/B at SDR, 250 at QDR)."""
    assert nbytes * PS_PER_S % rate == 0
    return nbytes * PS_PER_S // rate


def hop_times(rates: list[int], n: int, p: int, d: int, cut_through: bool) -> list[tuple[int, int]]:
    """(H_i, E_i): first and last byte leaving the sender of each hop, from H_0 = 0
    (the module docstring's recurrence)."""
    out = [(0, t(n, rates[0]))]
    for r in rates[1:]:
        h_prev, e_prev = out[-1]
        ti = t(n, r)
        if cut_through:
            e = max(h_prev + p + d + ti, e_prev + p + d)
        else:
            e = e_prev + p + d + ti
        out.append((e - ti, e))
    return out


def test_recurrence_by_hand():
    """The recurrence on the issue's case, by hand: 64-byte payload, n = 64 + 26 = 90
    bytes; SDR 90 ns, QDR 22.5 ns; no propagation.  Cut-through: the switch's last byte
    leaves at 90 + 40 = 130 ns (its first at 107.5 ns).  Store-and-forward: it starts
    at 90 + 40 = 130 ns and ends at 152.5 ns."""
    assert hop_times([SDR, QDR], 90, 0, 40_000, True) == [(0, 90_000), (107_500, 130_000)]
    assert hop_times([SDR, QDR], 90, 0, 40_000, False) == [(0, 90_000), (130_000, 152_500)]
    # same rate, three switches, cut-through: 3 x (p + d) + T
    hops = hop_times([SDR] * 4, 2074, 20_000, 40_000, True)
    assert hops[-1][1] + 20_000 == 4 * 20_000 + 3 * 40_000 + 2_074_000
    # store-and-forward: each of the 4 links adds p + T, each switch d
    hops = hop_times([SDR] * 4, 2074, 20_000, 40_000, False)
    assert hops[-1][1] + 20_000 == 4 * (20_000 + 2_074_000) + 3 * 40_000


@functools.cache
def one_message(path: str, mode: str, payload: int):
    """One single-packet RC SEND of *payload* bytes from src to dst along *path*."""
    p = Path(PATHS[path], propagation=PROP)
    flow = FlowSpec("f", "src", "dst", pattern="messages", count=1, message_size=payload, start=START)
    scn = scenario(p.links(), [flow], switches=p.switches,
                   switch=SwitchParams(cut_through=MODES[mode]), duration=50 * PS_PER_US)
    return p, simulate(scn)


@pytest.mark.parametrize("path,mode,payload", CASES)
def test_one_way_latency(path, mode, payload):
    p, run = one_message(path, mode, payload)
    n = payload + BASE                              # SEND_ONLY: LRH+BTH+ICRC+VCRC, payload a multiple of 4
    hops = hop_times(p.rates, n, PROP, FORWARDING_DELAY, MODES[mode])
    expected = hops[-1][1] + PROP                   # last byte at the destination
    (t_sent, sent), = run.tap.ftx["f"]
    (t_tail, got, done), = run.tap.frx["f"]
    assert (sent, got, done) == (payload, payload, True)
    assert t_sent == START
    assert t_tail - t_sent == expected


@pytest.mark.parametrize("path,mode,payload", CASES)
def test_switch_never_underruns(path, mode, payload):
    """On every hop the packet starts no earlier than d after its first byte came in
    (cut-through; after its last byte, store-and-forward) and its last byte leaves
    no earlier than its last byte came in plus d."""
    p, run = one_message(path, mode, payload)
    n = payload + BASE
    starts = []
    for hop in range(len(p.rates)):
        (start, nbytes), = run.tap.data_frames(p.label(hop))
        assert nbytes == n
        starts.append(start - START)
    d = FORWARDING_DELAY
    for i in range(1, len(starts)):
        head_in = starts[i - 1] + PROP
        tail_in = head_in + t(n, p.rates[i - 1])
        tail_out = starts[i] + t(n, p.rates[i])
        assert starts[i] >= (head_in if MODES[mode] else tail_in) + d, "hop %d starts too early" % i
        assert tail_out >= tail_in + d, "hop %d: the last byte leaves before it arrived + d" % i
    # and the switches add nothing beyond the rule: the hops are exactly the recurrence's
    hops = hop_times(p.rates, n, PROP, d, MODES[mode])
    assert [s + t(n, r) for s, r in zip(starts, p.rates)] == [e for _, e in hops]


@pytest.mark.parametrize("path,mode,payload", CASES)
def test_ack_leaves_after_the_last_byte_arrived(path, mode, payload):
    p, run = one_message(path, mode, payload)
    n = payload + BASE
    tail = START + hop_times(p.rates, n, PROP, FORWARDING_DELAY, MODES[mode])[-1][1] + PROP
    k = len(p.rates) - 1
    acks = run.tap.frames(p.back(k))                # the destination's own link, backwards
    assert [nb for _, nb in acks] == [BASE + 4]     # one ACK: BTH + AETH 4
    assert acks[0][0] >= tail


# ----------------------------------------------------------------- a message of several packets

def pipeline(rates: list[int], n: int, packets: int, p: int, d: int, cut_through: bool) -> list[int]:
    """E_(j,k) + p: when the last byte of packet j reaches the destination.  Packet j on
    hop i obeys the module docstring's rule for its own bytes and waits for the link:
    it cannot start before packet j - 1 has left it, E_(j,i) >= E_(j-1,i) + T_i.  The
    source sends back to back: E_(j,0) = (j + 1) T_0.  (Buffers of 4 packets and no
    other traffic: credits never bind for a 4-packet message.)"""
    prev: list[int] | None = None
    tails = []
    for j in range(packets):
        hops = [((j + 1) * t(n, rates[0]) - t(n, rates[0]), (j + 1) * t(n, rates[0]))]
        for i, r in enumerate(rates[1:], start=1):
            h_in, e_in = hops[-1]
            ti = t(n, r)
            e = max(h_in + p + d + ti, e_in + p + d) if cut_through else e_in + p + d + ti
            if prev is not None:
                e = max(e, prev[i] + ti)
            hops.append((e - ti, e))
        prev = [e for _, e in hops]
        tails.append(prev[-1] + p)
    return tails


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", ["k1-sdr", "k3-sdr", "k3-qdr-sdr", "k1-sdr-qdr", "k3-sdr-qdr-sdr"])
def test_message_completion_time(path, mode):
    """A 4-packet SEND (8 KiB): every packet's last byte reaches the destination when the
    pipeline says; the message completes with the last.  By hand, 4X SDR, k = 1, p = 20 ns:
    cut-through 4 x 2074 + 2 x 20 + 40 = 8376 ns; store-and-forward 3 x 2074 + 2 x (20 + 2074)
    + 40 = 10450 ns."""
    rates = PATHS[path]
    p = Path(rates, propagation=PROP)
    flow = FlowSpec("f", "src", "dst", pattern="messages", count=1, message_size=4 * 2048, start=START)
    # the destination acknowledges the message once, at its last packet (AckReq): no
    # ACK -- and no credit return for one -- crosses the data's path while it flows
    scn = scenario(p.links(), [flow], switches=p.switches, switch=SwitchParams(cut_through=MODES[mode]),
                   hca_params={"dst": HCAParams(ack_every=16)}, duration=100 * PS_PER_US)
    run = simulate(scn)
    want = pipeline(rates, 2048 + BASE, 4, PROP, FORWARDING_DELAY, MODES[mode])
    if path == "k1-sdr":
        assert want[-1] == (8_376_000 if MODES[mode] else 10_450_000)
    t0 = run.tap.ftx["f"][0][0]
    assert [tt - t0 for tt, _, _ in run.tap.frx["f"]] == want
    assert [done for _, _, done in run.tap.frx["f"]] == [False, False, False, True]
    assert len(run.tap.frames(p.back(len(rates) - 1))) == 1        # the one ACK


# ----------------------------------------------------------------- the capture

@pytest.mark.parametrize("path,mode", [("k1-sdr-qdr", "cut-through"), ("k1-sdr-qdr", "store-and-forward"),
                                       ("k1-qdr-sdr", "cut-through"), ("k3-sdr-qdr-sdr", "cut-through")])
def test_capture_no_response_before_request_tail(tmp_path, path, mode):
    """A capture of SENDs and RDMA READs along *path* (e.g. SDR -> switch -> QDR).
    Every frame appears once per hop, in hop order; a response (ACK, READ response)
    first appears when it leaves the responder.  The request's last byte reaches the
    responder (hop k's far end) no earlier than, for every hop i, its last byte left
    hop i's sender (start_i + n / r_i) plus the propagation of hops i..k and the
    forwarding delay of the k - i switches after it (E_k >= E_i + (k - i)(p + d), the
    module docstring).  pcap timestamps are first-byte start times in whole ns (ibemu
    writes t_ps // 1000); with p and d whole ns, t_resp >= t_i + L_i implies
    floor(t_resp) >= floor(t_i) + floor(L_i): checked in that form."""
    rates = PATHS[path]
    p = Path(rates, propagation=PROP)
    flows = [FlowSpec("send", "src", "dst", pattern="messages", count=8, message_size=4096, start=START),
             FlowSpec("read", "src", "dst", op="read", pattern="messages", count=4, message_size=4096,
                      start=START)]
    scn = scenario(p.links(), flows, switches=p.switches, switch=SwitchParams(cut_through=MODES[mode]),
                   duration=200 * PS_PER_US)
    pcap = tmp_path / "c.pcap"
    run_virtual(scn, pcap=pcap)
    requests = (OP.RC_SEND_FIRST, OP.RC_SEND_MIDDLE, OP.RC_SEND_LAST, OP.RC_SEND_ONLY, OP.RC_RDMA_READ_REQUEST)
    responses = (OP.RC_ACKNOWLEDGE, OP.RC_RDMA_READ_RESPONSE_FIRST, OP.RC_RDMA_READ_RESPONSE_MIDDLE,
                 OP.RC_RDMA_READ_RESPONSE_LAST, OP.RC_RDMA_READ_RESPONSE_ONLY)
    seen: dict[tuple, list[int]] = {}               # frame identity -> its timestamps, hop by hop
    req_at_dst: dict[int, dict[int, tuple[int, int]]] = {}   # destqp -> psn -> (ts, bytes)
    resp_first: list[tuple[int, int, int, int]] = []         # (ts, qp of the requester, psn, opcode)
    for ts, is_link, frame in read_erf_pcap(pcap):
        if is_link:
            continue
        f = codec.parse(frame)
        key = (f.slid, f.dlid, f.destqp, f.psn, f.opcode)
        hops = seen.setdefault(key, [])
        hops.append(ts)
        if f.opcode in requests and len(hops) == len(rates):         # the hop into dst
            req_at_dst.setdefault(f.destqp, {})[f.psn] = (tuple(hops), len(frame))
        elif f.opcode in responses and len(hops) == 1:              # leaving dst
            resp_first.append((ts, f.destqp, f.psn, f.opcode))
    # every frame crossed every hop, and no switch underran: on each hop the last byte
    # left no earlier than it arrived plus d.  With s_i in [1000 ts_i, 1000 ts_i + 999] ps,
    # s_i + T_i >= s_(i-1) + T_(i-1) + p + d implies 1000 ts_i + 999 + T_i >= 1000 ts_(i-1) + T_(i-1) + p + d
    assert all(len(h) == len(rates) for h in seen.values())
    lengths = {}
    for ts, is_link, frame in read_erf_pcap(pcap):
        if not is_link:
            f = codec.parse(frame)
            lengths[(f.slid, f.dlid, f.destqp, f.psn, f.opcode)] = len(frame)
    dst_lid = scn.hcas[1].lid
    for key, hops in seen.items():
        n = lengths[key]
        hop_rates = rates if key[1] == dst_lid else rates[::-1]       # requests forward, responses back
        for i in range(1, len(hops)):
            assert (hops[i] * PS_PER_NS + PS_PER_NS - 1 + n * PS_PER_S // hop_rates[i]
                    >= hops[i - 1] * PS_PER_NS + n * PS_PER_S // hop_rates[i - 1] + PROP + FORWARDING_DELAY), \
                "frame %s underran on hop %d: starts %s ns" % (key, i, hops)
    # the requester's QP number of each connection -> the responder's (from the requests)
    assert len(req_at_dst) == 2 and len(resp_first) >= 8 + 4 * 2
    qp_of = {}
    for snd, rcv in run_qps(scn):
        qp_of[snd] = rcv
    p_ns, d_ns, k = PROP // PS_PER_NS, FORWARDING_DELAY // PS_PER_NS, len(rates) - 1
    checked = 0
    for ts, req_qp, psn, opcode in resp_first:
        reqs = req_at_dst[qp_of[req_qp]]
        first = max(q for q in reqs if q <= psn)     # the request this response answers
        hops, nbytes = reqs[first]
        tail = max(ts_i + (nbytes * PS_PER_S // rates[i]) // PS_PER_NS + (k - i) * (p_ns + d_ns) + p_ns
                   for i, ts_i in enumerate(hops))
        assert ts >= tail, ("response 0x%02x PSN %d left at %d ns, before its request's last byte "
                            "arrived (%d ns; hops %s)" % (opcode, psn, ts, tail, hops))
        checked += 1
    assert checked == len(resp_first)


def run_qps(scn):
    """(requester QPN, responder QPN) of every flow, as the fabric numbers them."""
    fab = build_fabric(scn)
    return [(snd.qpn, rcv.qpn) for snd, rcv in fab.qps.values()]

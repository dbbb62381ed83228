"""Acceptance of issue 29, dependency order: walking the run's capture, no rank sends a
step's first packet before the last packet of that step's dependencies (every message
its earlier steps receive) has arrived at it.

The capture has every frame at the time its first byte goes on each directed link
(ns).  A packet's last byte arrives at its host when it started on the host's down link
plus its length at the link rate (1 byte/ns at 4X SDR).  Messages between two ranks go
in order on their one queue pair, so the m-th message from a to b in the capture is the
m-th that a's steps send to b, and the m-th that b's steps receive from a."""
from __future__ import annotations

from ibemu.capture.pcapng import read_capture
from ibemu.fabric.qp.psn import LAST_OPCODES
from ibemu.run import run_virtual
from ibemu.scenario.read import scenario_from_dict
from ibemu.wire.fields import get_dlid, get_opcode, get_slid

DATA = frozenset(range(0x00, 0x0C))     # RC SEND and RDMA WRITE opcodes (IBA Table 38)


def test_no_step_starts_before_its_dependencies_arrived(tmp_path):
    ops = [{"type": "allreduce", "size": 24576},                         # 3 KiB chunks: 2 packets
           {"type": "broadcast", "size": 5000, "root": 2},
           {"type": "alltoall", "size": 3000, "iterations": 2, "compute": "1us"},
           {"type": "barrier"},
           {"type": "halo", "size": 4100}]
    raw = {"template": {"name": "fat_tree2", "radix": 8, "leaves": 2},
           "scenario": {"name": "deps", "duration": "2ms"},
           "defaults": {"link": {"propagation": "10ns"}},
           "job": [{"name": "j", "hosts": ["h5", "h0", "h3", "h7", "h1", "h6", "h2", "h4"], "ops": ops}]}
    scn = scenario_from_dict(raw)
    pcap = tmp_path / "deps.pcapng"
    r = run_virtual(scn, pcap=pcap)
    assert r.summary["jobs"]["j"]["completed"]
    job = scn.jobs[0]
    rank_of_lid = {h.lid: job.hosts.index(h.name) for h in scn.hcas if h.name in job.hosts}
    host_rank = {h: i for i, h in enumerate(job.hosts)}

    first_sent: dict[tuple[int, int, int], int] = {}      # (src, dst, message) -> first byte out (ns)
    arrived: dict[tuple[int, int, int], int] = {}         # (src, dst, message) -> last byte in (ns)
    count_out: dict[tuple[int, int], int] = {}
    count_in: dict[tuple[int, int], int] = {}
    new_out: set[tuple[int, int]] = set()
    for rec in read_capture(pcap):
        if rec.link or get_opcode(rec.frame) not in DATA:
            continue
        a, b = rec.interface.split("->")
        src, dst = rank_of_lid[get_slid(rec.frame)], rank_of_lid[get_dlid(rec.frame)]
        last = get_opcode(rec.frame) in LAST_OPCODES
        if host_rank.get(a) == src:                         # on the source's up link
            m = count_out.get((src, dst), 0)
            if (src, dst) not in new_out:
                first_sent[(src, dst, m)] = rec.time_ns
                new_out.add((src, dst))
            if last:
                count_out[(src, dst)] = m + 1
                new_out.discard((src, dst))
        elif host_rank.get(b) == dst and last:              # the last packet on the destination's down link
            m = count_in.get((src, dst), 0)
            arrived[(src, dst, m)] = rec.time_ns + rec.length      # 1 byte/ns
            count_in[(src, dst)] = m + 1

    checked = 0
    for r_, steps in enumerate(job.programs):
        sent_to: dict[int, int] = {}
        recv_from: dict[int, int] = {}
        deps: list[int] = []                                # arrival times of everything received so far
        for st in steps:
            firsts = []
            for peer, _ in st.sends:
                m = sent_to.get(peer, 0)
                sent_to[peer] = m + 1
                firsts.append(first_sent[(r_, peer, m)])
            if firsts and deps:
                # 1 ns: the capture's times are whole ns, the emulator's ps
                assert min(firsts) >= max(deps) - 1, (r_, st, min(firsts), max(deps))
                checked += 1
            for peer in st.recvs:
                m = recv_from.get(peer, 0)
                recv_from[peer] = m + 1
                deps.append(arrived[(peer, r_, m)])
    assert checked > 8 * 20

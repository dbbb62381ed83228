"""PortXmitData and PortRcvData against a capture (issue 13, Deliver 3): IBA 16.1.3.5
counts the octets between the start-of-packet delimiter and the VCRC, the VCRC
excluded, divided by 4 -- a packet's PktLen -- and no link packets.  Every frame a
port starts is written to the capture once, at its start, so over a whole run the
capture's data frames, each (length - 2 bytes of VCRC) / 4, add up to the sum of every
port's PortXmitData exactly, and their number to the sum of PortXmitPkts."""
from __future__ import annotations

from pathlib import Path

import pytest

from ibemu.capture.erf import read_erf_pcap
from ibemu.run import run_virtual
from ibemu.scenario import load_scenario
from ibemu.wire.fields import get_pktlen
from ibemu.wire.layout import VCRC_LEN

SCEN = Path(__file__).parent.parent / "scenarios"


@pytest.mark.parametrize("name, overrides", [
    ("quickstart.toml", ['scenario.duration="300us"']),
    ("quickstart.toml", ['scenario.duration="300us"', 'flow[0].op="write"', 'flow[1].op="read"']),
    ("cca_opensm.toml", ['scenario.duration="300us"']),
])
def test_capture_adds_up_to_the_port_counters(tmp_path, name, overrides):
    pcap = tmp_path / "c.pcap"
    r = run_virtual(load_scenario(SCEN / name, overrides), pcap=pcap)
    words = packets = links = 0
    for _t, link, frame in read_erf_pcap(pcap):
        if link:
            links += 1                  # link flow-control packets: in no PerfMgt counter
            continue
        n = len(frame)
        assert (n - VCRC_LEN) % 4 == 0 and (n - VCRC_LEN) // 4 == get_pktlen(frame)
        words += (n - VCRC_LEN) // 4
        packets += 1
    ports = r.metrics.port_totals()
    assert packets and links
    assert sum(p["PortXmitData"] for p in ports.values()) == words
    assert sum(p["PortXmitPkts"] for p in ports.values()) == packets
    # what was received: all of it but the frames still on the wire at the end (at most
    # one per port, of at most 2090 bytes)
    rcv = sum(p["PortRcvData"] for p in ports.values())
    assert words - 2090 // 4 * len(ports) <= rcv <= words

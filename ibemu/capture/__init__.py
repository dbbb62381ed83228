"""Captures: pcapng files with one interface per directed link (:mod:`ibemu.capture.pcapng`,
what runs write) and pcap files of ERF InfiniBand records (:mod:`ibemu.capture.erf`,
``ibemu sample``), both read by :func:`read_erf_pcap` and :func:`read_capture`."""
from .erf import CaptureError, ErfPcapWriter, read_erf_pcap
from .pcapng import LinkCapture, PcapngWriter, Record, link_interfaces, open_link_capture, read_capture, read_pcapng

__all__ = ["CaptureError", "ErfPcapWriter", "read_erf_pcap", "LinkCapture", "PcapngWriter", "Record",
           "link_interfaces", "open_link_capture", "read_capture", "read_pcapng"]

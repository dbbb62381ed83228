"""Captures: pcap files of ERF InfiniBand records (:mod:`ibemu.capture.erf`)."""
from .erf import CaptureError, ErfPcapWriter, read_erf_pcap

__all__ = ["CaptureError", "ErfPcapWriter", "read_erf_pcap"]

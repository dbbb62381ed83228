"""ibemu: a packet-level InfiniBand congestion-control emulator."""
__version__ = "0.1.0"

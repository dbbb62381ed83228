"""The wire format: CRCs, OpCodes, the packet codec, link packets and the UDP shim."""

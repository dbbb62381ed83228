"""The sans-I/O fabric core: links and credits, switches, HCAs, queue pairs, traffic."""

"""Benchmarks: scripts that print GPts/s against a roofline or a peer run in the same call.

Peers are Devito, deepwave and pystencils; ``suite.py`` runs the standing table and writes the
records docs/performance.md draws from."""

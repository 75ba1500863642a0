"""Devito-style programs (the CFD and seismic tutorials' patterns) that run unchanged under
Devito and stencilgen: each module picks its framework from ``FRAMEWORK`` (default
stencilgen) and the rest is plain Devito code. ``reference/`` holds Devito 4.8.23's results,
which tests/test_devito_ports.py compares stencilgen's with."""

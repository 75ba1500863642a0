"""Demos: runnable seismic scripts with grid-size flags, and Devito programs ported as is.

Over ``stencilgen.seismic``: acoustic, TTI, the SA-TTI dummy benchmark, RTM, FWI and surveys;
``devito_ports`` runs Devito programs by changing the import."""

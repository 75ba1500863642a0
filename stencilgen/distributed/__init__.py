"""Grids split over MPI ranks: the MPI process model (mpi), the decomposition of a grid,
and the halo exchanges between ranks on CPUs and GPUs (halo_exchange, device_halos)."""

"""Where a field's values live: host and device copies (storage, places), the memory they
take, 16-bit storage formats and scales (precision), views for CuPy, PyTorch and JAX
(interop), the data of a grid split over MPI ranks (distributed_data)."""

"""The C/OpenMP backend: ``backend`` (the emitter: sections, the time loop, the entry point),
its parts ``grid_loops`` (loop nests), ``sparse_loops`` (sparse nests) and ``tuning`` (launch
shapes and probes), ``blocking`` (cache blocks and jammed rows of 3D nests), ``fusion`` (a producer
nest run inside its reader's blocks), ``rows`` (row pointers of the SIMD loops) and
``time_tiling`` (time-skewed tiles). It imports ``backends.common`` and nothing above
``backends``; the OpenACC and CUDA emitters build on its ``CBackend``."""

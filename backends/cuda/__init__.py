"""The CUDA backend: ``backend`` (the emitter), put together from ``kernel_args`` (what kernels
take), ``grid_kernels`` (kernels of grid nests), ``launches`` (launch shapes, grids, chunks) and
``host_program`` (the host's time loop, timers and memory) over ``kernel_text`` (printers,
preludes, shapes); the kernels' pieces (``point_pairs``: two points a
thread; ``fused_nests``: fused and staged nests in shared memory, with ``staged_rings``, the staged
inputs' rings and band, ``column_queues``, a staged input's column in registers, and
``ring_names``, the names they share; ``step_passes``: two time
steps a pass; ``sparse_kernels``: injection and interpolation; ``zero_split``: a nest split
at a zero box), ``launch`` (launch helpers) and ``runtime`` (the small runtime library the
host side loads: device memory, copies, streams). It imports ``backends.common`` and the C
backend it builds on, nothing above ``backends``."""

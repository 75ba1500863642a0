"""Running an Operator: the Operator itself and its options, argument binding, launch-shape
autotuning, long runs (Ctrl-C, progress), the NaN/Inf check after a run, and the
performance summary apply returns."""

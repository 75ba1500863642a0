"""What the backends share: ``cprinter`` (expressions as C), ``reserved`` (names a program
may not take), ``options`` (``EmitOptions``), ``device_layout`` (where an array's rows lie on
a device), ``split`` (a rank's block of a grid split over MPI), ``zero_box`` (nests split at a
run-time zero box) and ``interrupt`` (the stop flag and step counter of long runs). It
imports nothing of the backends' packages."""

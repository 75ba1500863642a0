"""The seismic toolkit: wavelets, velocity models with a sponge layer, source and receiver
geometry, the acoustic, TTI and SA-TTI propagators, arrival times and pictures; in its
modules, imaging with checkpointing (``imaging``, ``checkpointing``), surveys of many shots
on Dask (``survey``, with the workers' shot functions in ``shots``) and the RTM survey of
the demos (``rtm``). Installed with the package (Dask workers import the shot functions by
name). Units: metres, km/s and ms (frequencies in kHz).
"""
from .geometry import Shot, make_shot, receiver_line, source_at
from .model import (SAFETY, Model, damping_profile, homogeneous_model, laplacian_weight_sum,
                    layered_model, layered_velocity, stability_limit)
from .plotting import MATPLOTLIB_HINT, have_matplotlib, plot_shot_record, plot_snapshot
from .propagators import (FinalWavefield, ShotResult, acoustic_operator, acoustic_pde,
                          bytes_per_point, combine_summaries, default_progress, field_values,
                          run_chunked, run_shot)
from .traveltimes import direct_times, reflection_times
from .wavelets import TimeAxis, ricker, time_axis

__all__ = [
    "FinalWavefield", "MATPLOTLIB_HINT", "SAFETY", "Model", "Shot", "ShotResult", "TimeAxis",
    "acoustic_operator", "run_shot",
    "acoustic_pde", "bytes_per_point", "combine_summaries", "damping_profile",
    "default_progress", "field_values",
    "direct_times", "have_matplotlib", "homogeneous_model", "laplacian_weight_sum",
    "layered_model", "layered_velocity", "make_shot", "plot_shot_record", "plot_snapshot",
    "receiver_line", "reflection_times", "ricker", "run_chunked", "source_at",
    "stability_limit", "time_axis",
]

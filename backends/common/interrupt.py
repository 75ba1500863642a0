"""Stopping a run between time steps (Ctrl-C) and counting its steps, for every backend.

The entry point takes ``control``, the caller's ``volatile long[2]`` (or NULL): after each
time step it adds one to ``control[1]`` (the caller's progress reports read it) and leaves
the time loop when ``control[0]`` is set. The sections after the time loop, the NaN/Inf
count and (on GPUs) the copies back still run, so a stopped run leaves the fields as a run
to the last step done would. ``control[0]`` is set by the SIGINT handler the library exports
(``stencilgen_sigint_install`` / ``stencilgen_sigint_restore``, plain POSIX ``sigaction``):
the caller installs it around the call and puts the previous handler back exactly.
"""
from __future__ import annotations

#: the handler and its install/restore pair; %(export)s is the backend's export prefix
_HANDLER = r"""#if defined(__unix__) || defined(__APPLE__)
#include <signal.h>
#include <string.h>
/* Ctrl-C while a run is in the time loop: set the caller's stop flag, read once a step */
static volatile long *volatile sg_stop_flag = NULL;
static struct sigaction sg_previous_sigint;
static void sg_on_sigint(int sig)
{
  (void)sig;
  if (sg_stop_flag)
    sg_stop_flag[0] = 1;
}
%(export)sint stencilgen_sigint_install(volatile long *flag)
{
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_handler = sg_on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;   /* a wait in the OpenMP or CUDA runtime goes on */
  sg_stop_flag = flag;
  return sigaction(SIGINT, &action, &sg_previous_sigint);
}
%(export)sint stencilgen_sigint_restore(void)
{
  const int status = sigaction(SIGINT, &sg_previous_sigint, NULL);
  sg_stop_flag = NULL;
  return status;
}
#endif
"""


def handler(export: str = "") -> str:
    """C (or C++) text of the SIGINT handler and the functions that install and restore it."""
    return _HANDLER % {"export": export}


def step_end(prog, steps: int = 1) -> str:
    """The statement that ends ``steps`` time steps (one, or a two-step pass's): count them,
    stop where the caller asks."""
    ctl = prog.control
    return f"if ({ctl}) {{ {ctl}[1] += {steps}; if ({ctl}[0]) break; }}"

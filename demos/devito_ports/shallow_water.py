"""Devito's CFD tutorial 08 (the 2D shallow water equations) in its own form: the wave
height ``eta`` and the discharge fluxes ``M``, ``N`` are TimeFunctions, the bathymetry ``h``
and the water column ``D = h + eta`` Functions, the latter rewritten every step by an
equation of the Operator. The nonlinear system

    eta.dt + M.dxc + N.dyc = 0
    M.dt + (M**2/D).dxc + (M*N/D).dyc + g*D*eta.dxc + g*alpha**2*sqrt(M**2 + N**2)/D**(7/3)*M = 0
    N.dt + (M*N/D).dxc + (N**2/D).dyc + g*D*eta.dyc + (the same friction)*N = 0

is stepped forward-backward as the tutorial does (M from eta.forward, N from eta.forward and
M.forward), each written as a residual ``Eq(expr)`` and solved for the forward value. As the
tutorial, no boundary condition: the updates run on ``grid.interior`` and the edges keep
their first values. Here a Gaussian hump of water over a seamount on a 61 x 61 grid; the
height is saved every ``factor`` steps through a ``ConditionalDimension``."""
import numpy as np

from demos.devito_ports.framework import api

(ConditionalDimension, Eq, Function, Grid, Operator, TimeFunction, solve, sqrt) = (
    api.ConditionalDimension, api.Eq, api.Function, api.Grid, api.Operator, api.TimeFunction,
    api.solve, api.sqrt)

G = 9.81          # gravity [m/s^2]
ALPHA = 0.025     # Manning's roughness


def initial(n, extent):
    """The seafloor (30 m deep, a seamount rising to 10 m below the surface at x = 40 m) and
    the first wave height (a 0.5 m hump at the middle), on an x, y mesh."""
    xs = np.linspace(0.0, extent, n)
    x, y = np.meshgrid(xs, xs, indexing="ij")
    h = 30.0 - 20.0 * np.exp(-((x - 40.0) ** 2 + (y - 30.0) ** 2) / 30.0)
    eta = 0.5 * np.exp(-((x - 30.0) ** 2 + (y - 30.0) ** 2) / 8.0)
    return h, eta


def shallow_water_operator(eta, M, N, h, D, etasave, grid):
    """The tutorial's time step: the three updates on the interior, then the new water
    column, and the snapshot of the height at the steps the ConditionalDimension keeps."""
    friction = G * ALPHA ** 2 * sqrt(M ** 2 + N ** 2) / D ** (7.0 / 3.0)
    friction_n = G * ALPHA ** 2 * sqrt(M.forward ** 2 + N ** 2) / D ** (7.0 / 3.0)
    pde_eta = Eq(eta.dt + M.dxc + N.dyc)
    pde_m = Eq(M.dt + (M ** 2 / D).dxc + (M * N / D).dyc + G * D * eta.forward.dxc
               + friction * M)
    pde_n = Eq(N.dt + (M.forward * N / D).dxc + (N ** 2 / D).dyc + G * D * eta.forward.dyc
               + friction_n * N)
    updates = [Eq(f.forward, solve(pde, f.forward), subdomain=grid.interior)
               for f, pde in ((eta, pde_eta), (M, pde_m), (N, pde_n))]
    return Operator(updates + [Eq(D, eta.forward + h), Eq(etasave, eta)])


def run(n=61, extent=60.0, nt=201, dt=1.0 / 250.0, factor=50):
    grid = Grid(shape=(n, n), extent=(extent, extent), dtype=np.float32)
    eta = TimeFunction(name="eta", grid=grid, space_order=2)
    M = TimeFunction(name="M", grid=grid, space_order=2)
    N = TimeFunction(name="N", grid=grid, space_order=2)
    h = Function(name="h", grid=grid)
    D = Function(name="D", grid=grid)
    h0, eta0 = initial(n, extent)
    eta.data[0] = eta0
    M.data[0] = 50.0 * eta0           # a hump moving towards +x
    h.data[:] = h0
    D.data[:] = h0 + eta0
    nsnaps = (nt - 2) // factor + 1
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=factor)
    etasave = TimeFunction(name="etasave", grid=grid, space_order=2, save=nsnaps,
                           time_dim=t_sub)
    op = shallow_water_operator(eta, M, N, h, D, etasave, grid)
    op.apply(eta=eta, etasave=etasave, M=M, N=N, D=D, h=h, time=nt - 2, dt=dt)
    last = (nt - 1) % 2
    return {"etasave": np.array(etasave.data), "eta": np.array(eta.data[last]),
            "M": np.array(M.data[last]), "N": np.array(N.data[last]), "D": np.array(D.data)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()), float(value.sum()))

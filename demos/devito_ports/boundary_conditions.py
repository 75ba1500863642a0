"""Devito's boundary-conditions tutorial (userapi 04): a staggered acoustic system with
absorbing layers on the left, right and bottom, each a user SubDomain with its own damped
update (``v - dt*grad(p)/density`` on a VectorTimeFunction, ``(1 - d_l)*v`` with the damping
a polynomial of the dimension), and the integrated pressure ``p_i`` they damp towards; and
the tutorial's free surface: on a strip at the top, the evaluated stencils folded back on
themselves, each point above the surface read at its mirror ``INT(abs(y - k*h_y))`` (times
``sign(iy - k)`` for the velocity, ``iy`` the strip's own sub-dimension)."""
import importlib

import numpy as np

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(Eq, Grid, NODE, Operator, SparseTimeFunction, SubDomain, TimeFunction, VectorTimeFunction,
 div, grad, sign) = (api.Eq, api.Grid, api.NODE, api.Operator, api.SparseTimeFunction,
                     api.SubDomain, api.TimeFunction, api.VectorTimeFunction, api.div,
                     api.grad, api.sign)
symbolics = importlib.import_module(f"{api.__name__}.symbolics")
INT, retrieve_functions = symbolics.INT, symbolics.retrieve_functions

shape = (101, 101)
extent = (2000., 2000.)
nbpml = 10  # Number of PMLs on each side
so = 6  # Space order


class MainDomain(SubDomain):  # Main section with no damping
    name = 'main'

    def __init__(self, pmls, so, grid=None):
        self.pmls = pmls
        self.so = so
        super().__init__(grid=grid)

    def define(self, dimensions):
        x, y = dimensions
        return {x: ('middle', self.pmls, self.pmls),
                y: ('middle', self.so//2, self.pmls)}


class Left(SubDomain):  # Left PML region
    name = 'left'

    def __init__(self, pmls, grid=None):
        self.pmls = pmls
        super().__init__(grid=grid)

    def define(self, dimensions):
        x, y = dimensions
        return {x: ('left', self.pmls), y: y}


class Right(SubDomain):  # Right PML region
    name = 'right'

    def __init__(self, pmls, grid=None):
        self.pmls = pmls
        super().__init__(grid=grid)

    def define(self, dimensions):
        x, y = dimensions
        return {x: ('right', self.pmls), y: y}


class Base(SubDomain):  # Base PML region
    name = 'base'

    def __init__(self, pmls, grid=None):
        self.pmls = pmls
        super().__init__(grid=grid)

    def define(self, dimensions):
        x, y = dimensions
        return {x: ('middle', self.pmls, self.pmls), y: ('right', self.pmls)}


class FreeSurface(SubDomain):  # Free surface region
    name = 'freesurface'

    def __init__(self, pmls, so, grid=None):
        self.pmls = pmls
        self.so = so
        super().__init__(grid=grid)

    def define(self, dimensions):
        x, y = dimensions
        return {x: ('middle', self.pmls, self.pmls), y: ('left', self.so//2)}


def free_surface_top(eq, subdomain, update):
    """The tutorial's: ``eq``'s stencil folded back on itself above the surface (a pressure
    mirror is symmetric, a velocity mirror antisymmetric), on ``subdomain``."""
    lhs, rhs = eq.evaluate.args
    yfs = subdomain.dimensions[-1]
    y = yfs.parent
    funcs = retrieve_functions(rhs)
    mapper = {}
    for f in funcs:
        yind = f.indices[-1]
        if (yind - y).as_coeff_Mul()[0] < 0:
            s = sign(yind.subs({y: yfs, y.spacing: 1}))
            if update == 'velocity':
                mapper.update({f: s*f.subs({yind: INT(abs(yind))})})
            elif update == 'pressure':
                mapper.update({f: f.subs({yind: INT(abs(yind))})})
    return Eq(lhs, rhs.subs(mapper), subdomain=subdomain)


def run():
    grid = Grid(shape=shape, extent=extent)
    main = MainDomain(nbpml, so, grid=grid)
    left = Left(nbpml, grid=grid)
    right = Right(nbpml, grid=grid)
    base = Base(nbpml, grid=grid)
    freesurface = FreeSurface(nbpml, so, grid=grid)
    x, y = grid.dimensions
    density = 1.  # 1000kg/m^3
    velocity = 4.  # km/s
    gamma = 0.0002  # Absorption coefficient
    p = TimeFunction(name='p', grid=grid, time_order=1, space_order=so, staggered=NODE)
    v = VectorTimeFunction(name='v', grid=grid, time_order=1, space_order=so)
    p_i = TimeFunction(name='p_i', grid=grid, time_order=1, space_order=1, staggered=NODE)
    t0, tn = 0., 400.
    dt = 1e2*(1. / np.sqrt(2.)) / 60.  # Time step
    num = int(np.ceil((tn - t0 + dt) / dt))   # the tutorial's TimeAxis
    src = SparseTimeFunction(name='src', grid=grid, npoint=1, nt=num)
    src.coordinates.data[0, :] = 1000.
    src.data[:, 0] = ricker(num, dt, 0.02)
    d_l = (1-0.1*x)**2  # Left side
    d_r = (1-0.1*(grid.shape[0]-1-x))**2  # Right side
    d_b = (1-0.1*(grid.shape[1]-1-y))**2  # Base edge
    eq_v = Eq(v.forward, v - dt*grad(p)/density, subdomain=main)
    eq_p = Eq(p.forward, p - dt*velocity**2*density*div(v.forward), subdomain=main)
    eq_p_i = Eq(p_i.forward, p_i + dt*(p.forward+p)/2)
    damped = []
    for d, sub in ((d_l, left), (d_r, right), (d_b, base)):
        damped.append((Eq(v.forward, (1-d)*v - dt*grad(p)/density, subdomain=sub),
                       Eq(p.forward, (1-gamma*velocity**2*dt-d*dt)*p - d*gamma*velocity**2*p_i
                          - dt*velocity**2*density*div(v.forward), subdomain=sub)))
    (v_l, p_l), (v_r, p_r), (v_b, p_b) = damped
    src_term = src.inject(field=p.forward, expr=src)
    op = Operator([eq_v, v_l, v_b, v_r, eq_p, p_l, p_b, p_r, eq_p_i] + src_term)
    op(time=num-1)
    out = {"p": np.array(p.data), "vx": np.array(v[0].data), "vy": np.array(v[1].data),
           "p_i": np.array(p_i.data)}
    # the tutorial's second run: the same with a free surface on top
    fs_p = free_surface_top(eq_p, freesurface, 'pressure')
    fs_v = free_surface_top(eq_v, freesurface, 'velocity')
    for f in (p, v[0], v[1], p_i):
        f.data[:] = 0
    op = Operator([eq_v, fs_v, v_l, v_b, v_r, eq_p, fs_p, p_l, p_b, p_r, eq_p_i] + src_term)
    op(time=num-1)
    out.update(fs_p=np.array(p.data), fs_vx=np.array(v[0].data), fs_vy=np.array(v[1].data))
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()), float(np.linalg.norm(value)))

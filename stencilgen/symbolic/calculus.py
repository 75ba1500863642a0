"""Devito's vector calculus: ``grad``, ``div``, ``curl``, ``laplace`` and ``diag`` on scalar
expressions, vectors and tensors, written as the sums of derivatives they stand for (taken,
in an Eq, where the left-hand side's values sit: ``stencilgen.symbolic.relocation``)."""
from __future__ import annotations

import numpy as np
import sympy

from .derivatives import Derivative
from .differentiable import CALCULUS, DAdd
from .rotated import rotated
from ..errors import InvalidArgument
from .tensors import Tensor


def _d(expr, dim, shift, order, side, method="FD"):
    """The first derivative of ``expr`` along ``dim``, at ``dim + shift*h`` if shift is given
    (a tuple or list: one shift a dimension of the grid, Devito's); ``method="RSFD"``: the
    rotated one (``rotated``), taken where the equation needs it."""
    if expr == 0:
        return sympy.S.Zero
    if method == "RSFD":
        if shift is not None or side is not None:
            raise InvalidArgument("shift= and side= do not apply to rotated derivatives "
                                  "(method='RSFD'): they are taken where the equation's "
                                  "left-hand side sits, at a node or a cell centre")
        return rotated(expr, dim, order, name="RSFD")
    if isinstance(shift, (tuple, list)):
        dims = list(_grid_of(expr, "shift").dimensions)
        if len(shift) != len(dims):
            raise InvalidArgument(f"shift={tuple(shift)!r}: give one shift a dimension of the "
                                  f"grid ({', '.join(d.name for d in dims)}), or one for all")
        shift = shift[dims.index(dim)]
    x0 = None if shift is None else dim + sympy.nsimplify(shift) * dim.spacing
    return Derivative(expr, dim, fd_order=order, x0=x0, side=side)


def _grid_of(f, what):
    try:
        return f.grid
    except Exception:
        raise InvalidArgument(f"{what}: {f} involves no Function, so it has no grid") from None


def _check_method(what, method, rotated_too=True):
    if method not in (("FD", "RSFD") if rotated_too else ("FD",)):
        raise InvalidArgument(f"{what}: method={method!r} is not supported; use method='FD'"
                              + (" or 'RSFD' (rotated staggered finite differences)"
                                 if rotated_too else ""))


def grad(func, shift=None, order=None, method="FD", side=None):
    """The gradient: a vector of first derivatives of a scalar, a tensor ([i, j] = d v_i /
    d x_j) of a vector."""
    _check_method("grad", method)
    dims = _grid_of(func, "grad").dimensions
    if isinstance(func, Tensor):
        if func.entries.ndim != 1:
            raise InvalidArgument("grad: the gradient of a tensor is not supported; take the "
                                  "gradient of each row (a vector)")
        arr = np.empty((len(func.entries), len(dims)), dtype=object)
        for i, j in np.ndindex(arr.shape):
            arr[i, j] = _d(func.entries[i], dims[j], shift, order, side, method)
        return Tensor.like(arr)
    arr = np.empty(len(dims), dtype=object)
    for j, d in enumerate(dims):
        arr[j] = _d(func, d, shift, order, side, method)
    return Tensor.like(arr)


def div(func, shift=None, order=None, method="FD", side=None):
    """The divergence: of a vector, the scalar sum of d v_i / d x_i; of a tensor, the vector
    of its columns' divergences (Devito's); of a scalar, the sum of its first derivatives."""
    _check_method("div", method)
    dims = _grid_of(func, "div").dimensions
    if not isinstance(func, Tensor):
        return DAdd(*[_d(func, d, shift, order, side, method) for d in dims])
    if func.entries.ndim == 1:
        return DAdd(*[_d(e, d, shift, order, side, method) for e, d in zip(func.entries, dims)])
    # Devito's: entry i sums d t[j, i] / d x_j (the columns; the rows where t is symmetric)
    arr = np.empty(func.shape[1], dtype=object)
    for i in range(func.shape[1]):
        arr[i] = DAdd(*[_d(func.entries[j, i], d, shift, order, side, method)
                        for j, d in enumerate(dims)])
    return Tensor.like(arr)


def curl(func, shift=None, order=None, method="FD", side=None):
    """The curl of a vector of three components."""
    _check_method("curl", method)
    if not isinstance(func, Tensor) or func.entries.ndim != 1 or len(func.entries) != 3:
        raise InvalidArgument("curl: give a vector of three components (a VectorFunction on "
                              "a 3D grid)")
    x, y, z = _grid_of(func, "curl").dimensions
    vx, vy, vz = func.entries
    d = lambda e, dim: _d(e, dim, shift, order, side, method)  # noqa: E731
    return Tensor.like(np.array([d(vz, y) - d(vy, z), d(vx, z) - d(vz, x),
                                 d(vy, x) - d(vx, y), None], dtype=object)[:3])


def laplace(func, shift=None, order=None, method="FD", side=None):
    """The Laplacian: the sum of second derivatives of a scalar; of a vector, entry by entry."""
    _check_method("laplace", method, rotated_too=False)
    if shift is not None or side is not None:
        raise InvalidArgument("laplace: shift= and side= are not supported; write "
                              "div(grad(u, shift=...), shift=...) for a staggered Laplacian")
    if isinstance(func, Tensor):
        return func.applyfunc(lambda e: laplace(e, order=order))
    dims = _grid_of(func, "laplace").dimensions
    return DAdd(*[Derivative(func, (d, 2), fd_order=order) for d in dims])


def grad45(func, shift=None, order=None):
    """Devito's gradient by rotated derivatives: ``grad(func, method='RSFD')``."""
    return grad(func, shift=shift, order=order, method="RSFD")


def div45(func, shift=None, order=None):
    """Devito's divergence by rotated derivatives: ``div(func, method='RSFD')``."""
    return div(func, shift=shift, order=order, method="RSFD")


def curl45(func, shift=None, order=None):
    """Devito's curl by rotated derivatives: ``curl(func, method='RSFD')``."""
    return curl(func, shift=shift, order=order, method="RSFD")


def diag(func, size=None):
    """Devito's diag: the diagonal tensor with ``func`` (a scalar) on its diagonal, of the
    grid's size (or ``size``); a vector's entries on the diagonal; a tensor's diagonal."""
    if isinstance(func, Tensor):
        if len(func.shape) == 2:
            arr = np.zeros(func.shape, dtype=object)
            for i in range(func.shape[0]):
                arr[i, i] = func.entries[i, i]
            return Tensor.like(arr)
        n = func.shape[0]
        arr = np.zeros((n, n), dtype=object)
        for i in range(n):
            arr[i, i] = func.entries[i]
        return Tensor.like(arr)
    n = size if size is not None else _grid_of(func, "diag").dim
    arr = np.zeros((n, n), dtype=object)
    for i in range(n):
        arr[i, i] = func
    return Tensor.like(arr)


# f.grad(), v.div()..., u.dx45
CALCULUS.update(grad=grad, div=div, curl=curl, laplace=laplace, rotated=rotated)

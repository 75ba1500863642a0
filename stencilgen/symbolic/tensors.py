"""Vectors and tensors of scalar expressions (Devito's VectorFunction, TensorFunction and
their time-dependent kinds): arithmetic entry by entry (and matrix products), derivative
shorthands applied to every entry, and equations that stand for one Eq per distinct entry."""
from __future__ import annotations

import numpy as np
import sympy

from .differentiable import CALCULUS, DAdd
from ..errors import InvalidArgument
from .functions import Function, TimeFunction, _on_subdomain
from .staggering import CELL, NODE


def _grid(entries):
    return next(e for e in entries.flat if hasattr(e, "grid")).grid


def _of_matrix(other, shape):
    """A sympy Matrix (or nested list, numpy array) of ``shape``'s entries as a Vector or
    Tensor (a column or row of n entries for a vector), as Devito adds them to its vectors;
    anything else as it is."""
    if isinstance(other, sympy.MatrixBase):
        values = np.array(other.tolist(), dtype=object)
    elif isinstance(other, (list, np.ndarray)) and not isinstance(other, Tensor):
        values = np.array(other, dtype=object)
    else:
        return other
    if len(shape) == 1 and values.size == shape[0] and values.ndim <= 2 and \
            1 in values.shape[:2] + (1,):
        values = values.reshape(shape)
    if values.shape != tuple(shape):
        return other
    arr = np.empty(shape, dtype=object)
    for idx in np.ndindex(shape):
        arr[idx] = sympy.sympify(values[idx])
    return Tensor.like(arr)


class Tensor:
    """A vector (shape (n,)) or matrix (n, n) of scalar expressions; ``symmetric`` when its
    entries [i, j] and [j, i] are one function (a symmetric stress tensor)."""

    _op_priority = 200.0     # above the Differentiable expressions': ``ro * v`` is ours
    symmetric = False

    def __init__(self, entries):
        arr = np.empty(np.shape(entries)[:2] if np.ndim(entries) > 1 else len(entries),
                       dtype=object)
        for idx in np.ndindex(arr.shape):
            arr[idx] = sympy.sympify(entries[idx[0]][idx[1]] if arr.ndim == 2 else entries[idx[0]])
        self.entries = arr

    @classmethod
    def like(cls, arr):
        """A Vector or a Tensor (matrix) of the entries ``arr`` (a numpy object array)."""
        out = (Vector if arr.ndim == 1 else Tensor).__new__(Vector if arr.ndim == 1 else Tensor)
        out.entries = arr
        return out

    # -- shape and entries ---------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.entries.shape

    def __len__(self) -> int:
        return self.entries.size

    def __iter__(self):
        return iter(self.entries.flat)

    def __getitem__(self, index):
        item = self.entries[index]
        return Tensor.like(item) if isinstance(item, np.ndarray) else item

    def values(self) -> list:
        """The distinct non-zero entries, row by row (what an Eq of this tensor writes)."""
        out = []
        for e in self.entries.flat:
            if e != 0 and not any(e == o for o in out):
                out.append(e)
        return out

    def applyfunc(self, fn):
        arr = np.empty(self.shape, dtype=object)
        for idx in np.ndindex(self.shape):
            e = self.entries[idx]
            arr[idx] = e if e == 0 else fn(e)
        return Tensor.like(arr)

    @property
    def grid(self):
        return _grid(self.entries)

    @property
    def is_diagonal(self) -> bool:
        return self.entries.ndim == 2 and all(
            self.entries[i, j] == 0 for i, j in np.ndindex(self.shape) if i != j)

    # -- arithmetic ------------------------------------------------------------------------
    def _zip(self, other, op, what):
        other = _of_matrix(other, self.shape)
        if isinstance(other, (sympy.MatrixBase, list, np.ndarray)):
            raise InvalidArgument(f"cannot {what} {self!r} (shape {self.shape}) and a matrix of "
                                  f"shape {np.shape(np.array(other, dtype=object))}; give one "
                                  "entry per component")
        if not isinstance(other, Tensor):
            raise InvalidArgument(f"cannot {what} {self!r} and the scalar {other}; "
                                  "both sides must be vectors or tensors of the same shape")
        if other.shape != self.shape:
            raise InvalidArgument(f"cannot {what} shapes {self.shape} and {other.shape}")
        arr = np.empty(self.shape, dtype=object)
        for idx in np.ndindex(self.shape):
            arr[idx] = op(self.entries[idx], other.entries[idx])
        return Tensor.like(arr)

    def __add__(self, other):
        return self._zip(other, lambda a, b: a + b, "add")

    __radd__ = __add__

    def __sub__(self, other):
        return self._zip(other, lambda a, b: a - b, "subtract")

    def __rsub__(self, other):
        return self._zip(other, lambda a, b: b - a, "subtract")

    def __neg__(self):
        return self.applyfunc(lambda e: -e)

    def __mul__(self, other):
        if isinstance(other, Tensor):
            return _matmul(self, other)
        return self.applyfunc(lambda e: e * other)

    def __rmul__(self, other):
        if isinstance(other, Tensor):
            return _matmul(other, self)
        return self.applyfunc(lambda e: other * e)

    def __truediv__(self, other):
        return self.applyfunc(lambda e: e / other)

    # -- derivatives and the rest, entry by entry ----------------------------------------------
    def __getattr__(self, name):
        """Any attribute of the entries (``v.forward``, ``v.dx``, ``tau.dt``), entry by entry."""
        if name.startswith("_") or name == "entries":
            raise AttributeError(name)
        try:
            return self.applyfunc(lambda e: getattr(e, name))
        except AttributeError as e:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}: {e}") from None

    # -- Devito's calculus as methods: a vector's ``v.div()`` is its (scalar) divergence ------
    def div(self, shift=None, order=None, method="FD", side=None):
        """The divergence (``calculus.div``)."""
        return CALCULUS["div"](self, shift, order, method, side)

    def grad(self, shift=None, order=None, method="FD", side=None):
        """The gradient, a tensor of a vector (``calculus.grad``)."""
        return CALCULUS["grad"](self, shift, order, method, side)

    def curl(self, shift=None, order=None, method="FD", side=None):
        """The curl of a vector of three components (``calculus.curl``)."""
        return CALCULUS["curl"](self, shift, order, method, side)

    def laplacian(self, shift=None, order=None, method="FD", side=None):
        """The Laplacian, entry by entry (``calculus.laplace``)."""
        return CALCULUS["laplace"](self, shift, order, method, side)

    def __call__(self, *args, **kwargs):
        """Call every entry (``v.dx(x0=...)``)."""
        return self.applyfunc(lambda e: e(*args, **kwargs))

    @property
    def evaluate(self):
        """Every entry with its derivatives expanded (a property, as Devito's)."""
        return self.applyfunc(lambda e: e.evaluate if hasattr(e, "evaluate") else e)

    def transpose(self, inner=True):
        """The transposed matrix; ``inner=True`` (Devito's default) also takes the adjoint of
        every derivative in it (``u.dx`` -> ``u.dx.T``), ``inner=False`` keeps them."""
        if self.entries.ndim != 2:
            raise InvalidArgument("transpose: a vector has no transpose here; use it as it is")
        out = Tensor.like(self.entries.T.copy())
        return out.applyfunc(_adjoint) if inner else out

    @property
    def T(self):
        return self.transpose(inner=True)

    def __repr__(self) -> str:
        if self.entries.ndim == 1:
            return f"Vector({', '.join(map(str, self.entries))})"
        rows = ["[" + ", ".join(map(str, r)) + "]" for r in self.entries]
        return f"Tensor([{', '.join(rows)}])"


class Vector(Tensor):
    """A vector of scalar expressions (``grad(p)``, ``v.forward``)."""


def _matmul(a, b):
    """The matrix product ``a * b`` of a tensor and a vector or two tensors."""
    A, B = a.entries, b.entries
    if A.ndim != 2 or A.shape[1] != B.shape[0]:
        raise InvalidArgument(f"cannot multiply shapes {A.shape} and {B.shape}: the product of "
                              "a tensor and a vector (or two tensors) is a matrix product")
    if B.ndim == 1:
        arr = np.array([DAdd(*[A[i, k] * B[k] for k in range(B.shape[0])])
                        for i in range(A.shape[0])] + [None], dtype=object)[:-1]
    else:
        arr = np.empty((A.shape[0], B.shape[1]), dtype=object)
        for i, j in np.ndindex(arr.shape):
            arr[i, j] = DAdd(*[A[i, k] * B[k, j] for k in range(A.shape[1])])
    return Tensor.like(arr)


def _adjoint(expr):
    """``expr`` with every derivative in it replaced by its adjoint (``.T``)."""
    from .derivatives import Derivative
    if isinstance(expr, Derivative):
        return expr.T
    if not expr.args:
        return expr
    return expr.func(*[_adjoint(a) for a in expr.args])


# -- the functions -----------------------------------------------------------------------

def _component_staggering(staggered, n, default):
    """Per-component staggerings: Devito's default, one for all (NODE, CELL), or one each."""
    if staggered is None:
        return default
    if isinstance(staggered, (tuple, list)) and len(staggered) == n and all(
            isinstance(s, (tuple, list)) or s is None or s is NODE or s is CELL
            or hasattr(s, "spacing")
            for s in staggered) and not all(hasattr(s, "spacing") for s in staggered):
        return list(staggered)
    return [staggered] * n


class VectorFunction(Vector):
    """Devito's VectorFunction: one Function per grid dimension, ``name_x``..., each
    staggered half a spacing along its own dimension unless ``staggered=`` says otherwise."""

    _kind = Function

    def __init__(self, name=None, grid=None, staggered=None, **kwargs):
        if grid is None:
            raise InvalidArgument(f"{type(self).__name__} {name!r}: give grid=")
        grid = _on_subdomain(grid, f"{type(self).__name__} {name!r}")
        dims = grid.dimensions
        stag = _component_staggering(staggered, len(dims), [d for d in dims])
        self.entries = np.empty(len(dims), dtype=object)
        for i, d in enumerate(dims):
            self.entries[i] = self._kind(name=f"{name}_{d.name}", grid=grid,
                                         staggered=stag[i], **kwargs)
        self.name = name


class VectorTimeFunction(VectorFunction):
    """Devito's VectorTimeFunction: a VectorFunction of TimeFunctions."""

    _kind = TimeFunction


class TensorFunction(Tensor):
    """Devito's TensorFunction: ``name_xy``... per pair of dimensions, symmetric (one function
    for [i, j] and [j, i]) by default; the diagonal on the nodes, [i, j] staggered along both
    dimensions; ``diagonal=True`` keeps only the diagonal (zeros elsewhere)."""

    _kind = Function

    def __init__(self, name=None, grid=None, symmetric=True, diagonal=False, staggered=None,
                 **kwargs):
        if grid is None:
            raise InvalidArgument(f"{type(self).__name__} {name!r}: give grid=")
        grid = _on_subdomain(grid, f"{type(self).__name__} {name!r}")
        dims = grid.dimensions
        n = len(dims)
        self.entries = np.zeros((n, n), dtype=object)
        for i, j in np.ndindex(n, n):
            if (diagonal and i != j) or (symmetric and j < i):
                continue
            stag = NODE if i == j else (dims[i], dims[j])
            if staggered is not None:
                stag = staggered[i][j] if isinstance(staggered, (tuple, list)) else staggered
            self.entries[i, j] = self._kind(name=f"{name}_{dims[i].name}{dims[j].name}",
                                            grid=grid, staggered=stag, **kwargs)
        if symmetric:
            for i, j in np.ndindex(n, n):
                if j < i:
                    self.entries[i, j] = self.entries[j, i]
        self.name = name
        self.symmetric = symmetric


class TensorTimeFunction(TensorFunction):
    """Devito's TensorTimeFunction: a TensorFunction of TimeFunctions."""

    _kind = TimeFunction


def equations(lhs, rhs, make):
    """The scalar equations ``lhs = rhs`` stands for, one per distinct entry of ``lhs``
    (a symmetric tensor's [i, j] takes the right-hand side's [j, i] for j < i, as Devito)."""
    if isinstance(rhs, Tensor) and rhs.shape != lhs.shape:
        raise InvalidArgument(f"Eq: the left-hand side has shape {lhs.shape} and the right-hand "
                              f"side {rhs.shape}")
    chosen = {}
    for idx in np.ndindex(lhs.shape):
        target = lhs.entries[idx]
        if target != 0:
            chosen[target] = rhs.entries[idx] if isinstance(rhs, Tensor) else rhs
    return [make(t, chosen[t]) for t in lhs.values()]

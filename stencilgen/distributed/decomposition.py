"""A Grid split over the ranks of an MPI communicator: a Cartesian topology of blocks, each
rank owning one block of global indices; where the blocks lie and who the neighbours are.

Plain data and pure functions, so that the split is testable without MPI: ``split`` and
``topology`` take numbers; ``Decomposition.of`` asks the communicator for its size and rank.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ..errors import InvalidArgument


def split(n: int, parts: int) -> tuple[tuple[int, int], ...]:
    """``parts`` blocks of ``n`` points as (first, last) global indices, sizes differing by
    at most one, the larger first (numpy.array_split's rule, Devito's too)."""
    base, extra = divmod(n, parts)
    out, start = [], 0
    for i in range(parts):
        size = base + (1 if i < extra else 0)
        out.append((start, start + size - 1))
        start += size
    return tuple(out)


def _factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


#: blocks this much shorter than the longest still count as longest when choosing a split
NEAR_LONGEST = 0.8


def topology(shape: tuple[int, ...], ranks: int) -> tuple[int, ...]:
    """Ranks per dimension for ``ranks`` blocks of a grid of ``shape``: each prime factor of
    ``ranks``, largest first, splits the dimension whose blocks are then longest, which keeps
    the faces, and so the halo messages, small. Among blocks within ``NEAR_LONGEST`` of the
    longest the outermost dimension is split: its faces are contiguous in memory (a GPU
    sends them as they lie, with no packing) and at most a quarter larger."""
    dims = [1] * len(shape)
    for p in sorted(_factors(ranks), reverse=True):
        lengths = [n / d for n, d in zip(shape, dims)]
        near = NEAR_LONGEST * max(lengths)
        dims[next(i for i, n in enumerate(lengths) if n >= near)] *= p
    return tuple(dims)


def check_topology(shape, given, ranks: int) -> tuple[int, ...]:
    """``given`` (ranks per dimension, None or "*" entries chosen) checked against ``ranks``."""
    if given is None:
        return topology(shape, ranks)
    given = tuple(given)
    if len(given) != len(shape):
        raise InvalidArgument(f"Grid: topology {given} has {len(given)} entries but the grid "
                              f"has {len(shape)} dimensions")
    fixed = 1
    for g in given:
        if g not in (None, "*"):
            if not isinstance(g, int) or g < 1:
                raise InvalidArgument(f"Grid: topology {given}: each entry is a positive "
                                      "integer, or '*' to choose")
            fixed *= g
    if ranks % fixed:
        raise InvalidArgument(f"Grid: topology {given} needs a multiple of {fixed} ranks, the "
                              f"communicator has {ranks}")
    free = [i for i, g in enumerate(given) if g in (None, "*")]
    rest = topology(tuple(shape[i] for i in free), ranks // fixed) if free else ()
    if not free and fixed != ranks:
        raise InvalidArgument(f"Grid: topology {given} makes {fixed} blocks, the communicator "
                              f"has {ranks} ranks; give a topology of {ranks} blocks")
    dims = list(given)
    for i, r in zip(free, rest):
        dims[i] = r
    return tuple(dims)


@dataclass(frozen=True)
class Decomposition:
    """This rank's block of a grid split over ``comm``'s ranks (``cart``: the Cartesian
    communicator, ranks in row-major order of their coordinates)."""

    comm: object                     # the user's communicator
    cart: object                     # the Cartesian communicator made from it
    shape: tuple[int, ...]           # the global grid
    dims: tuple[int, ...]            # ranks per dimension
    coords: tuple[int, ...]          # this rank's place in the topology
    blocks: tuple                    # per dimension, the (first, last) index of every block

    @classmethod
    def of(cls, shape, comm, given=None) -> "Decomposition":
        if not all(hasattr(comm, m) for m in ("Get_size", "Create_cart")):
            raise InvalidArgument(f"Grid: comm must be an mpi4py communicator (e.g. "
                                  f"MPI.COMM_WORLD), got {type(comm).__name__}")
        dims = check_topology(shape, given, comm.Get_size())
        cart = comm.Create_cart(dims, periods=[False] * len(dims), reorder=False)
        blocks = tuple(split(n, d) for n, d in zip(shape, dims))
        decomposition = cls(comm, cart, tuple(shape), dims,
                            tuple(cart.Get_coords(cart.Get_rank())), blocks)
        decomposition.check_blocks(1)
        return decomposition

    @property
    def rank(self) -> int:
        return self.cart.Get_rank()

    @property
    def size(self) -> int:
        return self.cart.Get_size()

    # Devito's Distributor names
    @property
    def is_parallel(self) -> bool:
        return self.size > 1

    @property
    def nprocs(self) -> int:
        return self.size

    @property
    def myrank(self) -> int:
        return self.rank

    @property
    def owned(self) -> tuple[tuple[int, int], ...]:
        """(first, last) global index of this rank's block per dimension."""
        return tuple(b[c] for b, c in zip(self.blocks, self.coords))

    @property
    def starts(self) -> tuple[int, ...]:
        return tuple(lo for lo, _ in self.owned)

    @property
    def local_shape(self) -> tuple[int, ...]:
        return tuple(hi - lo + 1 for lo, hi in self.owned)

    @property
    def decomposed(self) -> tuple[bool, ...]:
        """Whether each dimension is split (more than one rank along it)."""
        return tuple(d > 1 for d in self.dims)

    def neighbour(self, direction) -> int | None:
        """The rank of the block next to this one in ``direction`` (-1, 0 or +1 per
        dimension), or None at the edge of the grid."""
        coords = [c + s for c, s in zip(self.coords, direction)]
        if any(not 0 <= c < d for c, d in zip(coords, self.dims)):
            return None
        return self.cart.Get_cart_rank(coords)

    def directions(self):
        """Every direction towards a neighbour that exists (faces, edges, corners)."""
        for direction in product((-1, 0, 1), repeat=len(self.dims)):
            if any(direction) and self.neighbour(direction) is not None:
                yield direction

    def block_of(self, coords) -> tuple[tuple[int, int], ...]:
        return tuple(b[c] for b, c in zip(self.blocks, coords))

    def owner(self, index) -> int:
        """The rank whose block holds grid point ``index`` (global)."""
        coords = [next(i for i, (lo, hi) in enumerate(b) if lo <= x <= hi)
                  for b, x in zip(self.blocks, index)]
        return self.cart.Get_cart_rank(coords)

    def check_blocks(self, width: int) -> None:
        """Every block at least ``width`` points long along each split dimension: a halo
        is filled by the next block alone."""
        for axis, (blocks, d) in enumerate(zip(self.blocks, self.dims)):
            shortest = min(hi - lo + 1 for lo, hi in blocks)
            if d > 1 and shortest < width:
                raise InvalidArgument(
                    f"Grid of shape {self.shape} over {self.size} MPI ranks (topology "
                    f"{self.dims}): blocks of {shortest} points along dimension {axis} are "
                    f"narrower than the halo of {width} the stencils read; use fewer ranks "
                    "along it (Grid(topology=...)) or a larger grid")


@dataclass(frozen=True)
class SingleProcess:
    """Devito's ``grid.distributor`` of a grid on one process: nothing is split."""

    is_parallel: bool = False
    nprocs: int = 1
    myrank: int = 0
    comm: object = None

    def __repr__(self) -> str:
        return "Distributor(nprocs=1)"


SINGLE_PROCESS = SingleProcess()

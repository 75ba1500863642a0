"""Subdomains of a Grid, as Devito's: the built-in ``grid.interior`` (the domain less one
point on every side) and ``grid.subdomains['domain']``, and user classes that override
``define``. ``Eq(..., subdomain=sd)`` runs its equation on that region only; derivatives in it
read outside the region as usual.

A SubDomain maps each grid dimension to one span (Devito's meaning, bounds at run time):
``d`` itself (all of it), ``('left', n)`` (``d_m`` to ``d_m + n - 1``), ``('right', n)``
(``d_M - n + 1`` to ``d_M``) or ``('middle', l, r)`` (``d_m + l`` to ``d_M - r``).
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument

_FORMS = ("d (all of it), ('left', n), ('right', n) or ('middle', l, r), n, l and r "
          "non-negative integers")


def _count(value, what: str) -> int:
    """``value`` as a non-negative int (numpy integers too, not bools), else an error."""
    if isinstance(value, bool) or not hasattr(value, "__index__") or int(value) < 0:
        raise InvalidArgument(f"{what} is {value!r}; give a non-negative integer")
    return int(value)


def _span(owner: str, d, n: int, spec) -> tuple:
    """One dimension's span, checked: ('middle', l, r), ('left', n) or ('right', n)."""
    if spec == d:
        return ("middle", 0, 0)
    entries = tuple(spec) if isinstance(spec, (tuple, list)) else ()
    side = entries[0] if entries else None
    if side == "middle" and len(entries) == 3:
        return ("middle",) + tuple(_count(v, f"{owner}: a thickness along {d}")
                                   for v in entries[1:])
    if side in ("left", "right") and len(entries) == 2:
        width = _count(entries[1], f"{owner}: the thickness along {d}")
        if width > n:
            raise InvalidArgument(f"{owner}: ({side!r}, {width}) along {d}, which has only {n} "
                                  f"points; give at most {n}")
        return (side, width)
    raise InvalidArgument(f"{owner}: define() maps {d} to {spec!r}; map each dimension to "
                          + _FORMS.replace("d (", f"{d} ("))


def _spans(sub, grid) -> tuple:
    """The spans ``sub.define`` gives the dimensions of ``grid``, in the grid's order."""
    owner = f"SubDomain {sub.name!r}"
    mapping = sub.define(grid.dimensions)
    if not isinstance(mapping, dict):
        raise InvalidArgument(f"{owner}: define() must return a dict from each of the grid's "
                              f"dimensions {grid.dimensions} to {_FORMS}; got {mapping!r}")
    missing = [d for d in grid.dimensions if d not in mapping]
    extra = [k for k in mapping if k not in grid.dimensions]
    if missing or extra:
        raise InvalidArgument(f"{owner}: define() must map exactly the grid's dimensions "
                              f"{grid.dimensions}; missing {missing}, not the grid's {extra}")
    return tuple(_span(owner, d, n, mapping[d]) for d, n in zip(grid.dimensions, grid.shape))


class SubDomain:
    """Devito's SubDomain: subclass it, set ``name`` and override ``define(self, dimensions)``
    to map every grid dimension to a span (see the module). Attach it to a grid with
    ``MyDomain(grid=grid)`` or, Devito 4.8's older way, ``Grid(..., subdomains=(MyDomain(),))``
    (which also lists it in ``grid.subdomains``)."""

    name = None

    def __init__(self, *args, grid=None, **kwargs):
        if args or kwargs:
            raise InvalidArgument(f"{type(self).__name__}: a SubDomain takes only grid=, got "
                                  f"{len(args)} positional and {sorted(kwargs)} keyword "
                                  "argument(s)")
        if self.name is None:
            self.name = type(self).__name__
        self._grid = None
        self.spans = ()
        if grid is not None:
            self._attach(grid)

    def define(self, dimensions):
        raise InvalidArgument(f"SubDomain {self.name!r}: override define(self, dimensions) to "
                              f"return a dict from each dimension to {_FORMS}")

    def _attach(self, grid):
        """Compute the spans on ``grid`` (once; a SubDomain belongs to one grid)."""
        if self._grid is not None and self._grid is not grid:
            raise InvalidArgument(f"SubDomain {self.name!r} already belongs to {self._grid!r}; "
                                  "create one SubDomain object per Grid")
        self.spans = _spans(self, grid)
        self._grid = grid

    @property
    def grid(self):
        return self._grid

    def _attached(self):
        """The grid, or an error saying how to attach one."""
        if self._grid is None:
            raise InvalidArgument(f"SubDomain {self.name!r} belongs to no Grid yet; create it "
                                  f"with {type(self).__name__}(grid=grid)")
        return self._grid

    @property
    def shape(self) -> tuple:
        """Points per dimension at the grid's full bounds (Devito's ``shape``)."""
        return tuple(n - s[1] - s[2] if s[0] == "middle" else s[1]
                     for n, s in zip(self._attached().shape, self.spans))

    @property
    def thickness(self) -> tuple:
        """(left, right) points left out per dimension at the grid's full bounds."""
        return tuple((s[1], s[2]) if s[0] == "middle" else
                     (0, n - s[1]) if s[0] == "left" else (n - s[1], 0)
                     for n, s in zip(self._attached().shape, self.spans))

    @property
    def dimensions(self) -> tuple:
        """Devito's: per grid dimension the dimension itself where the subdomain spans all of
        it, else its SubDimension ``i`` + name (an equation indexed by them runs there)."""
        from .dimensions import SubDimension
        out = []
        for d, span in zip(self._attached().dimensions, self.spans):
            if span == ("middle", 0, 0):
                out.append(d)
            else:
                thickness = (span[1], span[2]) if span[0] == "middle" else \
                    (span[1], None) if span[0] == "left" else (None, span[1])
                out.append(SubDimension(f"i{d.name}", d, thickness))
        return tuple(out)

    def __repr__(self) -> str:
        return f"SubDomain {self.name!r}"


class SubDimensionRegion(SubDomain):
    """The part of a grid an equation indexed by SubDimensions runs on (made by the
    Operator): theirs along their parents, ``base``'s (a subdomain, or all) elsewhere."""

    def __init__(self, grid, subs: dict, base=None):
        self._mapping = {}
        for i, d in enumerate(grid.dimensions):
            sub = subs.get(d)
            whole = base is None or base.spans[i] == ("middle", 0, 0)
            # the subdomain's own sub-dimension (``subdomain.dimensions``) names its span
            if sub is not None and not whole and sub.span != base.spans[i]:
                raise InvalidArgument(f"an equation indexed by {sub} also has subdomain "
                                      f"{base.name!r} cutting {d}; give one of them")
            self._mapping[d] = sub.span if sub is not None else \
                d if base is None else base.spans[i]
        self.name = "_".join(s.name for s in subs.values()) + \
            (f"_{base.name}" if base is not None else "")
        super().__init__(grid=grid)

    def define(self, dimensions):
        return {d: (d if v == ("middle", 0, 0) else v) for d, v in self._mapping.items()}


class Domain(SubDomain):
    """The whole domain (Devito's ``grid.subdomains['domain']``)."""

    name = "domain"

    def define(self, dimensions):
        return {d: d for d in dimensions}


class Interior(SubDomain):
    """The domain less one point on every side (Devito's ``grid.interior``)."""

    name = "interior"

    def define(self, dimensions):
        return {d: ("middle", 1, 1) for d in dimensions}


SubDomainRegion = SubDomain   # the name the equations and the lowering knew it by


class SubDomainSet(SubDomain):
    """Devito's SubDomainSet: ``N`` boxes, ``bounds`` = (xm, xM, ym, yM, ...), per dimension
    the points each box leaves out from the left and from the right (an int for all boxes,
    or N of them). An equation on it runs on each box in turn; consecutive equations on the
    same set run box by box, as Devito's do (``boxes``: one SubDomain each)."""

    def __init__(self, N=1, bounds=None, grid=None):
        self.n_domains = _count(N, f"{type(self).__name__}: N")
        self._bounds = bounds
        self.boxes = ()
        super().__init__(grid=grid)

    def _attach(self, grid):
        if self._grid is not None and self._grid is not grid:
            raise InvalidArgument(f"SubDomain {self.name!r} already belongs to {self._grid!r}; "
                                  "create one SubDomain object per Grid")
        n, owner = self.n_domains, f"SubDomainSet {self.name!r}"
        bounds = tuple(self._bounds) if isinstance(self._bounds, (tuple, list)) else ()
        if len(bounds) != 2 * grid.dim:
            raise InvalidArgument(f"{owner}: bounds must be (xm, xM, ym, yM, ...), the points "
                                  f"left out from each side of {grid.dim} dimensions; got "
                                  f"{len(bounds)} entries")
        columns = []
        for k, b in enumerate(bounds):
            values = np.broadcast_to(np.asarray(b), (n,)) if np.ndim(b) == 0 else np.asarray(b)
            if values.shape != (n,):
                raise InvalidArgument(f"{owner}: bounds entry {k} has {values.size} values "
                                      f"for {n} boxes")
            columns.append([_count(v, f"{owner}: a bound") for v in values])
        self.boxes = tuple(_Box(f"{self.name}{i}", grid, tuple(
            ("middle", columns[2 * j][i], columns[2 * j + 1][i]) for j in range(grid.dim)))
            for i in range(n)) or \
            (_Box(f"{self.name}_none", grid, (("middle", grid.shape[0], 0),) +
                  (("middle", 0, 0),) * (grid.dim - 1)),)   # N=0: a box of no points
        self.spans = ()
        self._grid = grid

    @property
    def shape(self) -> tuple:
        """Each box's points per dimension (Devito's)."""
        return tuple(box.shape for box in self.boxes[:self.n_domains])

    @property
    def dimensions(self):
        """Devito's MultiSubDimensions (``ix``, ``iy``...): an equation indexed by them runs
        on each box."""
        from .dimensions import MultiSubDimension
        grid = self._attached()
        return tuple(MultiSubDimension(f"i{d.name}", d, self) for d in grid.dimensions)


class _Box(SubDomain):
    """One box of a SubDomainSet."""

    def __init__(self, name, grid, spans):
        self.name, self._spans = name, spans
        super().__init__(grid=grid)

    def define(self, dimensions):
        return {d: (d if s == ("middle", 0, 0) else s) for d, s in zip(dimensions, self._spans)}


class Border(SubDomainSet):
    """Devito's Border: the boxes covering the edges of ``grid`` to a thickness of
    ``border`` (one int, one per dimension, or (left, right) per dimension), on the sides
    ``dims`` names (all by default; ``{x: x, y: 'left'}``), ``inset`` from the edges;
    ``corners`` 'nooverlap' (each corner one box), 'overlap' (slabs that overlap there) or
    'nocorners'."""

    def __init__(self, grid, border, dims=None, name="border", inset=0, corners="nooverlap"):
        if corners not in ("overlap", "nooverlap", "nocorners"):
            raise InvalidArgument(f"Border: corners={corners!r}; give 'overlap', 'nooverlap' "
                                  f"or 'nocorners'")
        self.name = name
        widths, gaps = _pairs(border, grid, "border"), _pairs(inset, grid, "inset")
        sides = _sides(dims, grid)
        boxes = _slabs(grid, widths, gaps, sides) if corners == "overlap" else \
            _tiles(grid, widths, gaps, sides, corners == "nocorners")
        bounds = tuple(np.array([box[k] for box in boxes], dtype=np.int64)
                       for k in range(2 * grid.dim))
        super().__init__(N=len(boxes), bounds=bounds, grid=grid)


def _pairs(spec, grid, what) -> tuple:
    """A Border thickness or inset as (left, right) per dimension (entries an int or a
    pair each: ``(1, (2, 1))``)."""
    if isinstance(spec, (int, np.integer)) or (not isinstance(spec, (tuple, list)) and
                                                np.ndim(spec) == 0):
        return ((int(spec), int(spec)),) * grid.dim
    if len(spec) != grid.dim:
        raise InvalidArgument(f"Border: {what} {spec!r} needs one entry per dimension "
                              f"({grid.dim})")
    return tuple((int(b[0]), int(b[1])) if isinstance(b, (tuple, list)) else (int(b), int(b))
                 for b in spec)


def _sides(dims, grid) -> dict:
    """Dimension -> 'both', 'left' or 'right' for the dimensions that get a border."""
    if dims is None:
        dims = {d: d for d in grid.dimensions}
    elif not isinstance(dims, dict):
        dims = {dims: dims}
    out = {}
    for d, side in dims.items():
        if d not in grid.dimensions or not (side == d or side in ("left", "right")):
            raise InvalidArgument(f"Border: dims must map the grid's dimensions to themselves "
                                  f"(both sides), 'left' or 'right'; got {d}: {side!r}")
        out[d] = "both" if side == d else side
    return out


def _slabs(grid, widths, gaps, sides) -> list:
    """'overlap': per side a slab as deep as the border and as wide as the inset domain."""
    boxes = []
    for i, (d, n) in enumerate(zip(grid.dimensions, grid.shape)):
        if d not in sides:
            continue
        flat = [g for pair in gaps for g in pair]
        left, right = list(flat), list(flat)
        left[2 * i + 1] = n - widths[i][0] - gaps[i][0]
        right[2 * i] = n - widths[i][1] - gaps[i][1]
        boxes += {"both": [left, right], "left": [left], "right": [right]}[sides[d]]
    return boxes


def _tiles(grid, widths, gaps, sides, no_corners) -> list:
    """'nooverlap'/'nocorners': the grid cut into left, centre and right bands per bordered
    dimension; every tile but the all-centre one is a box (no corners: only those with a
    centre band somewhere)."""
    import itertools
    bands = []
    for d, n, (bl, br), (il, ir) in zip(grid.dimensions, grid.shape, widths, gaps):
        side = sides.get(d)
        left, right = (il, n - bl - il), (n - br - ir, ir)
        if side == "both":
            bands.append({"L": left, "C": (bl + il, br + ir), "R": right})
        elif side == "left":
            bands.append({"L": left, "C": (bl + il, br + ir if no_corners else ir)})
        elif side == "right":
            bands.append({"C": (bl + il if no_corners else il, br + ir), "R": right})
        else:
            bands.append({"C": (0, 0)})
    boxes = []
    for combo in itertools.product(*[list(b) for b in bands]):
        if all(c == "C" for c in combo) or (no_corners and "C" not in combo):
            continue
        boxes.append([v for b, c in zip(bands, combo) for v in b[c]])
    return boxes


def builtin(grid) -> dict:
    """``grid``'s own subdomains by name, as Devito names them."""
    return {"domain": Domain(grid=grid), "interior": Interior(grid=grid)}


def attach(grid, subdomains) -> dict:
    """``Grid(subdomains=...)``: each user SubDomain attached to ``grid``, by name."""
    items = subdomains if isinstance(subdomains, (tuple, list)) else (subdomains,)
    out = {}
    for sub in items:
        if not isinstance(sub, SubDomain):
            raise InvalidArgument(f"Grid: subdomains must be SubDomain objects (an instance of "
                                  f"a class with define()), got {sub!r}")
        if sub.name in out or sub.name in ("domain", "interior"):
            raise InvalidArgument(f"Grid: two subdomains are named {sub.name!r}; give each "
                                  "SubDomain class its own name")
        sub._attach(grid)
        out[sub.name] = sub
    return out

"""Points and boxes from what scientists hold: numpy arrays, lists of
triples, MDAnalysis AtomGroups and Universes (``.positions`` and
``.dimensions``), ASE Atoms (``.positions`` and ``.cell``). Neither
MDAnalysis nor ASE is imported: objects are read by their attributes.
"""
import math
import os
import sys
from array import array
from typing import Any, List, Optional, Sequence, Tuple

try:  # numpy is optional
    import numpy as _np
except ImportError:  # pragma: no cover - exercised where numpy is absent
    _np = None

# file extensions -> the daemon's ?format= names (GET /v1/datasets formats)
FORMATS = {
    ".json": "json", ".csv": "csv", ".xyz": "xyz", ".f64": "f64", ".bin": "f64",
    ".f32": "f32", ".lammpstrj": "lammps", ".dump": "lammps", ".lammpsdump": "lammps",
    ".dcd": "dcd",
    ".xtc": "xtc", ".trr": "trr",
    ".nc": "netcdf", ".ncdf": "netcdf",
    ".gro": "gro", ".pdb": "pdb", ".ent": "pdb",
}


def format_of_path(path: str, format: Optional[str]) -> str:
    """The upload format of a file: `format` when given, else its extension's."""
    if format is not None:
        return format
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FORMATS:
        raise ValueError("cannot tell the format of %r from its name; pass format= one of %s"
                         % (str(path), ", ".join(sorted(set(FORMATS.values())))))
    return FORMATS[ext]


def _positions_of(obj: Any) -> Any:
    """The coordinates held by obj: itself, its .positions, or (an MDAnalysis
    Universe) its .atoms.positions."""
    if hasattr(obj, "positions"):
        return obj.positions
    atoms = getattr(obj, "atoms", None)
    if atoms is not None and hasattr(atoms, "positions"):
        return atoms.positions
    return obj


def box_of(obj: Any) -> Optional[List[float]]:
    """The periodic box of an MDAnalysis object (``.dimensions``: lx, ly, lz,
    alpha, beta, gamma in degrees) or an ASE Atoms (``.cell``, with
    ``.pbc``), in the daemon's ``box`` form: [Lx, Ly, Lz] for an orthogonal
    box, else GROMACS's nine numbers (the vectors a, b, c, lower-triangular).
    None when obj has no box."""
    dims = getattr(obj, "dimensions", None)
    if dims is not None:
        d = [float(v) for v in list(dims)]
        if len(d) != 6 or not all(v > 0 for v in d[:3]):
            return None
        lx, ly, lz, alpha, beta, gamma = d
        if alpha == beta == gamma == 90.0:
            return [lx, ly, lz]
        ca, cb, cg = (math.cos(math.radians(x)) for x in (alpha, beta, gamma))
        sg = math.sin(math.radians(gamma))
        bx, by = ly * cg, ly * sg
        cx = lz * cb
        cy = lz * (ca - cb * cg) / sg
        cz = math.sqrt(max(lz * lz - cx * cx - cy * cy, 0.0))
        return [lx, 0.0, 0.0, bx, by, 0.0, cx, cy, cz]
    cell = getattr(obj, "cell", None)
    if cell is None:
        return None
    pbc = getattr(obj, "pbc", True)
    if not all(bool(p) for p in (list(pbc) if hasattr(pbc, "__len__") else [pbc] * 3)):
        return None
    m = [[float(v) for v in row] for row in (cell.array if hasattr(cell, "array") else cell)]
    if len(m) != 3 or any(len(r) != 3 for r in m) or not all(m[i][i] > 0 for i in range(3)):
        return None
    if all(m[i][j] == 0 for i in range(3) for j in range(3) if i != j):
        return [m[0][0], m[1][1], m[2][2]]
    if m[0][1] or m[0][2] or m[1][2]:
        raise ValueError("the cell is not lower-triangular (a along x, b in the xy plane); "
                         "rotate it first, e.g. with ase.geometry.cell_to_cellpar and back")
    return [v for row in m for v in row]


def encode(points: Any) -> Tuple[Any, int]:
    """Points as the daemon's f64 upload body (little-endian float64 triples)
    and their count. Accepts an (N, 3) array-like, a flat sequence is refused."""
    pos = _positions_of(points)
    if _np is not None:
        a = _np.asarray(pos, dtype="<f8")
        if a.ndim != 2 or a.shape[1] != 3:
            raise ValueError("points must be an (N, 3) array of x, y, z; got shape %s"
                             % (a.shape,))
        return memoryview(_np.ascontiguousarray(a)).cast("B"), a.shape[0]
    flat = array("d")
    n = 0
    for p in pos:
        t = list(p)
        if len(t) != 3:
            raise ValueError("points must be [x, y, z] triples; point %d has %d values"
                             % (n, len(t)))
        flat.extend(float(v) for v in t)
        n += 1
    if sys.byteorder == "big":
        flat.byteswap()
    return memoryview(flat).cast("B"), n


def as_array(values: Sequence, dtype: str) -> Any:
    """numpy array of dtype when numpy is present, else a list."""
    if _np is None:
        return list(values)
    return _np.asarray(values, dtype=dtype)



def have_numpy() -> bool:
    return _np is not None

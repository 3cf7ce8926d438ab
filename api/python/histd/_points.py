"""Points and boxes from what scientists hold: numpy arrays, lists of
triples (with a weight as a fourth number), MDAnalysis Universes and
AtomGroups over their trajectory (``u.trajectory[a:b:c]`` too), ASE Atoms
and lists of them. Neither MDAnalysis nor ASE is imported: objects are read
by their attributes. Molecular objects are written as one extended XYZ
(every frame, its box, the atoms' elements, names, residues and molecules,
the weights; each coordinate the shortest decimal that reads back as the
same float64), the format the daemon reads with its topology.
"""
import math
import os
import sys
from array import array
from typing import IO, Any, List, Optional, Sequence, Tuple

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


SHAPE = "points must be an (N, 3) array of x, y, z, or (N, 4) with a weight w"


def _number(v: Any, what: str) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, got %r" % (what, v)) from None


def weights_of(weights: Any, n: int) -> List[float]:
    """`weights` as n floats (one a point, or an atom of every frame), or a
    ValueError that says what is wrong."""
    if isinstance(weights, (str, bytes, bool)) or not hasattr(weights, "__len__"):
        raise ValueError("weights must be a sequence of %d numbers, one a point; got %r"
                         % (n, type(weights).__name__))
    if _np is not None and getattr(weights, "ndim", 1) != 1:
        raise ValueError("weights must be one number a point (a 1-D array of %d); got shape %s"
                         % (n, weights.shape))
    if len(weights) != n:
        raise ValueError("weights has %d values for %d points" % (len(weights), n))
    w = [_number(v, "weight %d" % i) for i, v in enumerate(weights)]
    bad = [i for i, v in enumerate(w) if not math.isfinite(v)]
    if bad:
        raise ValueError("weight %d is %r: weights must be finite" % (bad[0], w[bad[0]]))
    return w


def encode(points: Any, weights: Any = None) -> Tuple[Any, int, Optional[List[float]]]:
    """Points as the daemon's f64 upload body (little-endian float64 triples),
    their count, and their weights (None without): from an (N, 3) array-like
    and `weights`, or an (N, 4) one (x, y, z, w). Other shapes are refused
    with a sentence."""
    pos = _positions_of(points)
    if _np is not None:
        try:
            a = _np.asarray(pos, dtype="<f8")
        except (TypeError, ValueError) as e:
            raise ValueError("%s: %s" % (SHAPE, e)) from None
        if a.ndim != 2 or a.shape[1] not in (3, 4):
            raise ValueError("%s; got shape %s" % (SHAPE, a.shape))
        w = None
        if a.shape[1] == 4:
            if weights is not None:
                raise ValueError("weights given twice: as the points' fourth column and as "
                                 "weights=")
            w, a = weights_of(a[:, 3], a.shape[0]), a[:, :3]
        elif weights is not None:
            w = weights_of(weights, a.shape[0])
        return memoryview(_np.ascontiguousarray(a)).cast("B"), a.shape[0], w
    flat = array("d")
    ws: List[float] = []
    n = 0
    for p in pos:
        t = list(p)
        if len(t) not in (3, 4) or (n > 0 and (len(t) == 4) != bool(ws)):
            raise ValueError("%s; point %d has %d values" % (SHAPE, n, len(t)))
        flat.extend(_number(v, "a coordinate of point %d" % n) for v in t[:3])
        if len(t) == 4:
            ws.append(t[3])
        n += 1
    if ws and weights is not None:
        raise ValueError("weights given twice: as the points' fourth number and as weights=")
    if sys.byteorder == "big":
        flat.byteswap()
    w = weights_of(ws, n) if ws else None if weights is None else weights_of(weights, n)
    return memoryview(flat).cast("B"), n, w


# ---- molecular objects, as one extended XYZ ----

def is_molecular(obj: Any) -> bool:
    """An MDAnalysis Universe or AtomGroup, a sliced MDAnalysis trajectory
    (``u.trajectory[a:b:c]``), an ASE Atoms, or a list of ASE Atoms."""
    if hasattr(obj, "universe") and hasattr(getattr(obj, "universe"), "trajectory"):
        return True
    if hasattr(obj, "trajectory") and hasattr(obj, "step") and not hasattr(obj, "positions"):
        return True
    if hasattr(obj, "get_chemical_symbols"):
        return True
    return isinstance(obj, (list, tuple)) and len(obj) > 0 and all(
        hasattr(a, "get_chemical_symbols") for a in obj)


def _attr(atoms: Any, name: str) -> Any:
    """An MDAnalysis topology attribute, or None where the Universe has none
    (MDAnalysis's NoDataError is a ValueError and an AttributeError)."""
    try:
        return list(getattr(atoms, name))
    except (AttributeError, ValueError):
        return None


def _text_column(what: str, values: Sequence[Any]) -> List[str]:
    out = [str(v) for v in values]
    for i, v in enumerate(out):
        if not v or any(c.isspace() for c in v):
            raise ValueError("atom %d's %s %r cannot be sent: it is empty or holds a blank; "
                             "rename it, or send the positions alone" % (i, what, v))
    return out


def _mdanalysis_columns(atoms: Any) -> List[Tuple[str, str, List[str]]]:
    """The extended XYZ columns (name, type, values) of an AtomGroup's
    topology: the elements (where every atom has one), names, residue names
    and numbers, and the molecule: MDAnalysis's fragments where it knows the
    bonds, else its molnums (a TPR's), else the residue (as histd reads GRO
    and PDB files)."""
    cols = []
    elements = _attr(atoms, "elements")
    if elements and all(isinstance(e, str) and e.strip() and " " not in e.strip()
                        for e in elements):
        cols.append(("species", "S", [e.strip() for e in elements]))
    for attr, col in (("names", "name"), ("resnames", "resname")):
        v = _attr(atoms, attr)
        if v is not None:
            cols.append((col, "S", _text_column(col, v)))
    resids = _attr(atoms, "resids")
    if resids is not None:
        cols.append(("resid", "I", [str(int(r)) for r in resids]))
    mol = _attr(atoms, "fragindices")
    if mol is None:
        mol = _attr(atoms, "molnums")
    if mol is None:
        mol = _attr(atoms, "resindices")
    if mol is not None:
        cols.append(("mol", "I", [str(int(m)) for m in mol]))
    return cols


def _frames_of(obj: Any, frames: Any) -> Tuple[List[Tuple[str, str, List[str]]], Any]:
    """The topology columns of obj and an iterator of (positions, box) a
    frame, over `frames` (None: all; a slice; an MDAnalysis sliced
    trajectory)."""
    if frames is not None and not isinstance(frames, slice) and not hasattr(frames, "trajectory"):
        raise ValueError("frames must be a slice (e.g. slice(0, 100, 10)) or an MDAnalysis "
                         "trajectory slice u.trajectory[a:b:c]; got %r" % (frames,))
    if hasattr(obj, "get_chemical_symbols") or isinstance(obj, (list, tuple)):  # ASE
        seq = [obj] if hasattr(obj, "get_chemical_symbols") else list(obj)
        if frames is not None:
            if not isinstance(frames, slice):
                raise ValueError("frames of a list of ASE Atoms must be a slice")
            seq = seq[frames]
        if not seq:
            raise ValueError("frames %r selects none of the trajectory's frames" % (frames,))
        symbols = _text_column("chemical symbol", seq[0].get_chemical_symbols())
        same = all(a.get_chemical_symbols() == seq[0].get_chemical_symbols() for a in seq)
        cols = [("species", "S", symbols)] if same else []
        return cols, ((a.positions, box_of(a)) for a in seq)
    if hasattr(obj, "universe"):  # MDAnalysis Universe or AtomGroup
        atoms = obj.atoms
        reader = obj.universe.trajectory
        cols = _mdanalysis_columns(atoms)
    else:  # u.trajectory[a:b:c]: the positions of every atom, no topology
        atoms, reader, frames = None, obj.trajectory, obj
        cols = []
    if hasattr(frames, "trajectory"):
        if frames.trajectory is not reader:
            raise ValueError("frames is a slice of another Universe's trajectory")
        steps = frames
    else:
        steps = reader[frames] if frames is not None else reader

    def walk() -> Any:
        now = reader.ts.frame
        try:
            for ts in steps:
                yield (atoms.positions if atoms is not None else ts.positions), box_of(ts)
        finally:
            reader[now]  # back where the user was
    return cols, walk()


def write_xyz(obj: Any, f: IO[bytes], frames: Any = None, weights: Any = None) -> int:
    """Writes obj (is_molecular) to f as extended XYZ, a frame at a time;
    returns the frames written. Weights: one a point of a frame."""
    cols, steps = _frames_of(obj, frames)
    count = 0
    for pos, box in steps:
        pos = _np.asarray(pos, dtype="<f8") if _np is not None else [list(p) for p in pos]
        n = len(pos)
        if count == 0:
            w = weights_of(weights, n) if weights is not None else None
            for name, _, values in cols:
                if len(values) != n:
                    raise ValueError("the %s column has %d values for %d atoms"
                                     % (name, len(values), n))
            props = ":".join("%s:%s:1" % (name, t) for name, t, _ in cols)
            props = (props + ":" if props else "") + "pos:R:3" + (":w:R:1" if w else "")
            pre = [" ".join(v[i] for _, _, v in cols) + " " if cols else "" for i in range(n)]
            post = ["\n" if w is None else " %r\n" % v for v in (w or [0.0] * n)]
        elif n != len(pre):
            raise ValueError("frame %d has %d atoms, the first %d" % (count, n, len(pre)))
        lattice = ""
        if box is not None:
            m = box if len(box) == 9 else [box[0], 0, 0, 0, box[1], 0, 0, 0, box[2]]
            lattice = 'Lattice="%s" pbc="T T T" ' % " ".join(repr(float(v)) for v in m)
        rows = pos.tolist() if hasattr(pos, "tolist") else pos
        f.write(("%d\n%sProperties=%s\n" % (n, lattice, props)).encode())
        f.write("".join("%s%r %r %r%s" % (pre[i], float(p[0]), float(p[1]), float(p[2]), post[i])
                        for i, p in enumerate(rows)).encode())
        count += 1
    if count == 0:
        raise ValueError("frames %r selects none of the trajectory's frames" % (frames,))
    return count


def as_array(values: Sequence, dtype: str) -> Any:
    """numpy array of dtype when numpy is present, else a list."""
    if _np is None:
        return list(values)
    return _np.asarray(values, dtype=dtype)



def have_numpy() -> bool:
    return _np is not None

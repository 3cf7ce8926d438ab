"""Results: a job's histogram (or count within a radius) as arrays."""
import io
from typing import Any, Dict, Optional

from ._points import _np, as_array

# the arrays a result may hold, and their dtypes
ARRAYS = {"edges": "f8", "counts": "u8", "weighted": "f8", "g": "f8", "coordination": "f8"}
# the integer scalars (exact: Python ints)
INTS = ("n", "n_b", "buckets", "below", "overflow", "total", "within", "block_size", "frames",
        "excluded")


class Result:
    """One result of histd.

    Arrays (numpy arrays when numpy is installed, else lists; None when the
    result has none): ``edges`` (buckets + 1 floats), ``centers`` (the bins'
    midpoints), ``counts`` (exact unsigned 64-bit integers), ``weighted``
    (the weighted sums, for ``weights=True``), ``g`` and ``coordination``
    (periodic boxes: g(r) in LAMMPS's ``compute rdf`` convention and the
    running coordination number).

    Exact integers: ``n``, ``n_b`` (A x B), ``below`` (pairs under the first
    edge), ``overflow`` (at or beyond the last edge), ``total`` (all pairs),
    ``within`` (a count within ``radius``).

    Trajectories: ``frames`` (the frames counted), ``select_a`` and
    ``select_b`` (the selections A and B came from, None for a whole
    dataset), ``exclude`` ("molecule" or None) with ``excluded`` (the pairs
    left out), ``unit`` (the length unit of A's file, or None), and
    ``per_frame`` (with ``per_frame=True``: a dict of each frame's
    ``total``, ``counts``, and periodic ``volume`` and ``g``, as lists).

    The normalisation and the run: ``volume`` (the box volume g(r) divides
    by, None in open space), ``statistic`` ("histogram" or "within"),
    ``bins`` ("width" or "edges"), ``bucket_width``, ``kernel`` (and
    ``kernel_reason``: why "auto" chose it, or None), ``precision``,
    ``exact``, ``device``, ``timing_ms`` (queue, parse, transfer, kernel,
    total) and ``job`` (the job's id, when there was one).
    """

    edges: Any
    counts: Any
    weighted: Any
    g: Any
    coordination: Any

    def __init__(self, doc: Dict[str, Any], arrays: Optional[Dict[str, Any]] = None,
                 job: Optional[str] = None) -> None:
        self.raw = doc
        self.job = job
        for k in INTS:
            setattr(self, k, int(doc[k]) if doc.get(k) is not None else None)
        self.statistic = doc.get("statistic")
        self.bins = doc.get("bins")
        self.bucket_width = doc.get("bucket_width")
        self.volume = doc.get("volume")
        self.radius = doc.get("radius")
        self.weighted_within = doc.get("weighted_within")
        self.kernel = doc.get("kernel")
        self.kernel_reason = doc.get("kernel_reason")
        for k in ("select_a", "select_b", "exclude", "unit", "per_frame"):
            setattr(self, k, doc.get(k))
        self.precision = doc.get("precision")
        self.exact = doc.get("exact")
        self.device = doc.get("device")
        self.timing_ms = dict(doc.get("timing_ms") or {})
        for k, dtype in ARRAYS.items():
            v = (arrays or {}).get(k, doc.get(k))
            setattr(self, k, None if v is None else as_array(v, dtype))
        if arrays:  # the .npz's scalars are exact too
            for k in ("below", "overflow", "total", "within", "n", "n_b"):
                if k in arrays:
                    setattr(self, k, int(arrays[k]))

    @property
    def centers(self) -> Any:
        """The bins' midpoints, (edges[k] + edges[k+1]) / 2."""
        if self.edges is None:
            return None
        e = self.edges
        if _np is not None:
            return (e[:-1] + e[1:]) / 2
        return [(e[i] + e[i + 1]) / 2 for i in range(len(e) - 1)]

    @classmethod
    def from_npz(cls, data: bytes, summary: Dict[str, Any], job: Optional[str] = None) -> "Result":
        """A result from the daemon's .npz (GET /v1/jobs/{id}/result?format=npz)
        and the job's summary (its ``result`` without the arrays)."""
        with _np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays = {k: (v if v.ndim else v[()]) for k, v in arrays.items()}
        return cls(summary, arrays, job)

    def to_dict(self) -> Dict[str, Any]:
        """Every field, arrays included."""
        d = dict(self.raw)
        for k in ARRAYS:
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d

    def __repr__(self) -> str:
        if self.statistic == "within":
            return "<histd.Result within %g: %s of %s pairs>" % (self.radius, self.within,
                                                                self.total)
        return "<histd.Result %s buckets, %s pairs%s, %s>" % (
            self.buckets, self.total, ", g(r)" if self.g is not None else "", self.device)

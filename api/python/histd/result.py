"""Results, read by the daemon's result schema (GET /v1/schema).

A result is whatever fields its job computed: a histogram (edges, counts,
g, ...), a count within a radius, a value per point (neighbours, nearest,
...), or a pair list (i, j, d). The schema lists every field a result may
hold -- its JSON member and group, its npz entry, its type and shape -- and
``Result`` takes them from it, so that a field the daemon adds reaches the
client without a line here: each field the result has is an attribute of
the same name (a field of a group, an entry of the group's dict:
``result.timing_ms["kernel"]``, ``result.per_frame["counts"]``). One
exception: the JSON's ``bins`` (how the bins were made, "width" or
"edges") is ``binning``, and ``bins`` are the bins' centres, as
MDAnalysis names them.

Adapters give a histogram under the names of the field's tools:
``as_mdanalysis()`` (InterRDF's ``results``), ``as_freud()``
(freud.density.RDF's attributes) and ``as_corrfunc()`` (the structured
array of Corrfunc.theory.DD).
"""
import io
import types
import warnings
from typing import Any, Dict, List, Optional

from ._points import _np

# numpy dtypes of the schema's types
DTYPES = {"u64": "u8", "i64": "i8", "f64": "f8", "bool": "?"}

def _infer(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Fields for a document read without the daemon's schema (Result(doc)):
    each member as it is, arrays typed by their values (non-negative whole
    numbers uint64, whole numbers int64, else float64, null as nan)."""
    def kind(v: Any) -> str:
        flat = [x for row in v for x in (row if isinstance(row, list) else [row])]
        if all(isinstance(x, bool) for x in flat) and flat:
            return "bool"
        if all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
            return "u64" if all(x >= 0 for x in flat) else "i64"
        return "f64"
    fields = []
    for group, src in [(None, doc)] + [(k, v) for k, v in doc.items() if isinstance(v, dict)]:
        for name, v in src.items():
            if isinstance(v, dict):
                continue
            shape = "array" if isinstance(v, list) else "scalar"
            typ = kind(v) if shape == "array" else (
                "bool" if isinstance(v, bool) else "u64" if isinstance(v, int) else
                "f64" if isinstance(v, float) else "str")
            fields.append({"name": name, "group": group, "type": typ, "shape": shape,
                           "npz": "%s.%s" % (group, name) if group else name})
    return fields


def _value(field: Dict[str, Any], v: Any) -> Any:
    """A field's value as Python wants it: exact ints, floats (null: nan in
    arrays, None alone), numpy arrays for the shapes that are arrays."""
    if v is None:
        return None
    if field["shape"] == "scalar":
        if hasattr(v, "ndim"):  # an npz scalar
            v = v[()] if v.ndim == 0 else v
            v = v.item() if hasattr(v, "item") else v
        if field["type"] in ("u64", "i64") and not isinstance(v, str):
            return int(v)
        if field["type"] == "f64" and not isinstance(v, str):
            return float(v)
        if field["type"] == "bool":
            return bool(v)
        return str(v)
    if _np is None:
        return v
    if isinstance(v, _np.ndarray):
        return v
    dtype = DTYPES.get(field["type"], "f8")
    if field["type"] == "str":
        return list(v)
    if dtype == "f8":
        v = [[_np.nan if x is None else x for x in row] if isinstance(row, list)
             else (_np.nan if row is None else row) for row in v]
    return _np.asarray(v, dtype=dtype)


def _midpoints(e: Any) -> Any:
    """(e[k] + e[k+1]) / 2 of edges (None: None)."""
    if e is None:
        return None
    if _np is not None:
        return (e[:-1] + e[1:]) / 2
    return [(e[i] + e[i + 1]) / 2 for i in range(len(e) - 1)]


class Result:
    """One result of histd: every field it has, as an attribute (see the
    module's docstring). Exact integers (counts, totals) are Python ints or
    uint64 arrays; ``centers`` are the bins' midpoints; ``fields`` names the
    attributes the result has; ``raw`` is the JSON document; ``job`` the job's
    id when there was one."""

    def __init__(self, doc: Dict[str, Any], arrays: Optional[Dict[str, Any]] = None,
                 job: Optional[str] = None,
                 schema: Optional[List[Dict[str, Any]]] = None) -> None:
        self.raw = doc
        self.job = job
        self.fields: List[str] = []
        arrays = arrays or {}
        groups: Dict[str, Dict[str, Any]] = {}
        for f in schema or _infer(doc):
            if f.get("outputs") is not None and "json" not in f["outputs"]:
                continue
            group, name = f["group"], f["name"]
            src = doc.get(group) if group else doc
            v = arrays.get(f.get("npz") or name)
            if v is None and isinstance(src, dict):
                v = src.get(name)
            if v is None:
                continue
            v = _value(f, v)
            if name == "bins" and group is None:  # "width" | "edges": bins are the centres
                name = "binning"
            if group:
                groups.setdefault(group, {})[name] = v
            else:
                setattr(self, name, v)
                self.fields.append(name)
        for group, members in groups.items():
            setattr(self, group, members)
            self.fields.append(group)

    def __getattr__(self, name: str) -> Any:
        # a field this result does not have reads as None (edges of a count
        # within a radius, n_b of a self job, ...)
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    @property
    def centers(self) -> Any:
        """The bins' midpoints, (edges[k] + edges[k+1]) / 2."""
        return _midpoints(self.edges)

    @property
    def centers2(self) -> Any:
        """The second axis's bin midpoints (rp_pi's pi, s_mu's mu)."""
        return _midpoints(self.edges2)

    @property
    def bins(self) -> Any:
        """The bins' centres (``centers``), as MDAnalysis's ``results.bins``.
        (How the bins were made, "width" or "edges", is ``binning``.)"""
        return self.centers

    # ---- the field's names ----

    def _histogram(self, tool: str) -> None:
        if self.edges is None or self.counts is None:
            raise ValueError("as_%s() needs a histogram; this result is a %s" % (
                tool, self.statistic))
        if _np is None:
            raise ValueError("as_%s() needs numpy" % tool)

    def _ordered_counts(self, tool: str) -> Any:
        """The counts as tools that count ordered pairs see them: a self
        job's pairs (i < j) twice, A x B's as they are."""
        pairing = self.pairing or ("cross" if self.n_b is not None else "self")
        if pairing == "self":
            return 2 * self.counts
        if pairing in ("cross", "ordered"):
            return self.counts
        raise ValueError("as_%s(): selections that share some atoms count each unordered pair "
                         "once (pairing %r), which %s's counts cannot be made from; ask for "
                         "pairs=\"ordered\"" % (tool, pairing, tool))

    def as_mdanalysis(self) -> Any:
        """The result as MDAnalysis's InterRDF leaves it: an object whose
        ``results`` has ``bins`` (the centres), ``edges``, ``count`` (pairs
        counted as InterRDF counts them, every ordered pair of every frame
        together: a self job's twice, as InterRDF(g, g, exclusion_block=(1,
        1)) counts them) and ``rdf`` (InterRDF's norm="rdf": the result's
        ``rdf``, which Client.rdf asks for; without it, one frame's g, which
        is the same). The names are MDAnalysis 2's."""
        self._histogram("mdanalysis")
        rdf = self.rdf
        if rdf is None and self.g is not None and (self.frames or 1) == 1:
            rdf = self.g
        if rdf is None:
            raise ValueError("as_mdanalysis() needs MDAnalysis's normalisation: ask for "
                             "norm=\"rdf\" (Client.rdf does), in a periodic box")
        results = types.SimpleNamespace(bins=self.centers, edges=self.edges,
                                        count=self._ordered_counts("mdanalysis"), rdf=rdf)
        return types.SimpleNamespace(results=results)

    def as_freud(self, normalize: bool = False) -> Any:
        """The result under freud.density.RDF's names: ``bin_centers``,
        ``bin_edges``, ``bin_counts`` (ordered pairs, as freud counts the
        neighbours of every query point: a self job's twice), ``rdf`` and
        ``n_r`` (the coordination number: the cumulative count per query
        point). ``rdf`` is freud's for the same ``normalize`` (freud 3:
        ``normalization_mode``): freud divides by the density of all N
        points, so for a set against itself its default is histd's g times
        (N - 1) / N, and ``normalize=True`` ("finite_size") is g itself."""
        self._histogram("freud")
        if self.g is None:
            raise ValueError("as_freud() needs g(r): a periodic box (Client.rdf)")
        rdf = self.g
        pairing = self.pairing or ("cross" if self.n_b is not None else "self")
        if pairing == "self" and not normalize:
            n = self.n / (self.frames or 1)  # points a frame
            rdf = self.g * (n - 1) / n
        return types.SimpleNamespace(bin_centers=self.centers, bin_edges=self.edges,
                                     bin_counts=self._ordered_counts("freud"), rdf=rdf,
                                     n_r=self.coordination)

    def as_corrfunc(self) -> Any:
        """The result as Corrfunc.theory.DD returns it: a numpy structured
        array, a row a bin, of ``rmin``, ``rmax``, ``ravg``, ``npairs``
        (uint64; an autocorrelation's pairs twice, as DD(autocorr=1) counts
        them) and ``weightavg`` (the mean of w_i w_j over the bin's pairs:
        weighted / counts, with weights). ``ravg`` is the job's ravg (ask for
        it with ``ravg=True``: each bin's mean distance, weighted by w_i w_j
        with weights, as Corrfunc's ravg; 0.0 in an empty bin). As Corrfunc
        documents, a field it was not asked for is 0.0: ``ravg`` without
        ``ravg=True`` and ``weightavg`` without weights; a warning says
        which. Pairs below the first edge or past the last are not in it,
        as in Corrfunc."""
        self._histogram("corrfunc")
        dtype = _np.dtype([("rmin", "f8"), ("rmax", "f8"), ("ravg", "f8"), ("npairs", "u8"),
                           ("weightavg", "f8")])
        out = _np.zeros(len(self.counts), dtype=dtype)
        out["rmin"], out["rmax"] = self.edges[:-1], self.edges[1:]
        out["npairs"] = self._ordered_counts("corrfunc")
        missing = []
        ravg = getattr(self, "ravg", None)
        if ravg is not None:
            r = _np.asarray([_np.nan if v is None else v for v in ravg], dtype="f8")
            out["ravg"] = _np.where(_np.isfinite(r), r, 0.0)
        else:
            missing.append("ravg (the job did not ask for it: ravg=True)")
        if self.weighted is not None:
            with _np.errstate(invalid="ignore", divide="ignore"):
                avg = _np.asarray(self.weighted, dtype="f8") / self.counts
            out["weightavg"] = _np.where(self.counts > 0, avg, 0.0)
        else:
            missing.append("weightavg (the job had no weights)")
        if missing:
            warnings.warn("as_corrfunc(): 0.0, as Corrfunc writes a field it was not asked "
                          "for, in " + " and ".join(missing), stacklevel=2)
        return out

    @classmethod
    def from_npz(cls, data: bytes, summary: Dict[str, Any], job: Optional[str] = None,
                 schema: Optional[List[Dict[str, Any]]] = None) -> "Result":
        """A result from the daemon's .npz (GET /v1/jobs/{id}/result?format=npz)
        and the job's summary (its ``result`` without the arrays)."""
        with _np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        return cls(summary, arrays, job, schema)

    def to_dict(self) -> Dict[str, Any]:
        """Every field, arrays included."""
        return {k: getattr(self, k) for k in self.fields}

    def __repr__(self) -> str:
        s = self.statistic
        if s == "within":
            return "<histd.Result within %g: %s of %s pairs>" % (self.radius, self.within,
                                                                self.total)
        if s in ("per_point", "nearest"):
            return "<histd.Result %s of %s points x %s frames, %s>" % (s, len(self.index or []),
                                                                      self.frames, self.device)
        if s == "pairs":
            return "<histd.Result %s pairs within %g, %s>" % (self.pairs, self.radius,
                                                             self.device)
        if s in ("rp_pi", "s_mu"):
            return "<histd.Result %s %s x %s buckets, %s pairs, %s>" % (
                s, self.buckets, self.buckets2, self.total, self.device)
        return "<histd.Result %s buckets, %s pairs%s, %s>" % (
            self.buckets, self.total, ", g(r)" if self.g is not None else "", self.device)

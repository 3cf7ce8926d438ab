"""The histd client: datasets, jobs and results over histd's HTTP API
(api/openapi.yaml), with the standard library's http.client."""
import http.client
import json
import os
import re
import tempfile
import time
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ._points import encode, format_of_path, have_numpy, is_molecular, write_xyz
from ._progress import Progress
from .result import Result

Points = Any  # an (N, 3) or (N, 4) array-like, an MDAnalysis or ASE object (_points.py)
Data = Union["Dataset", str, "os.PathLike[str]", Points]

UPLOAD_BLOCK = 1 << 20  # bytes a send while streaming a file
_DATASET_ID = re.compile(r"\A[0-9a-f]{64}\Z")


class HistdError(Exception):
    """An error answer of the daemon. ``str()`` is its problem+json sentence;
    ``status`` the HTTP status, ``title`` its title, ``detail`` the sentence,
    ``problem`` the whole problem document (None if the answer was not
    problem+json)."""

    def __init__(self, status: int, detail: str, title: str = "",
                 problem: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.problem = problem


class JobFailed(HistdError):
    """A job that ended failed or cancelled; ``job`` is its last document."""

    def __init__(self, job: Dict[str, Any]) -> None:
        why = job.get("error") or job["status"]
        super().__init__(0, "job %s %s: %s" % (job["id"], job["status"], why), job["status"])
        self.job = job


class Dataset:
    """A stored dataset: ``id``, ``n`` (points, every frame's together),
    ``frames``, ``name``, ``box`` (its first frame's periodic box as the
    daemon stores it with the points, each frame its own: [Lx, Ly, Lz], or
    LAMMPS's six numbers; None for open space), ``expires_at`` (when the
    daemon deletes it; None: never) and ``doc`` (the daemon's document, with
    ``atoms``: what its file said of its atoms). A growing dataset
    (``upload(..., growing=True)``) takes frames (``append()``) until
    ``seal()``."""

    def __init__(self, client: "Client", doc: Dict[str, Any],
                 box: Optional[List[float]] = None) -> None:
        self.client = client
        self.doc = doc
        self.id: str = doc["id"]
        self.n: int = int(doc.get("n", 0))
        self.frames: int = int(doc.get("frames", 1))
        self.name: Optional[str] = doc.get("name")
        self.box = box if box is not None else doc.get("box")
        self.expires_at: Optional[str] = doc.get("expires_at")

    def delete(self) -> None:
        """Deletes the dataset on the daemon."""
        self.client._call("DELETE", "/v1/datasets/" + self.id)

    def _set(self, doc: Dict[str, Any]) -> None:
        self.doc = doc
        self.n = int(doc.get("n", 0))
        self.frames = int(doc.get("frames", 1))

    @property
    def growing(self) -> bool:
        """Whether frames are appended to it (``upload(..., growing=True)``)."""
        return bool(self.doc.get("growing"))

    @property
    def regions(self) -> int:
        """A sky catalogue's jackknife regions (labels 0 .. regions-1); 0 without."""
        return int(self.doc.get("regions") or 0)

    @property
    def sealed(self) -> bool:
        """Whether a growing dataset takes no more frames (``seal()``)."""
        return bool(self.doc.get("sealed"))

    def append(self, frames: Data, format: Optional[str] = None, *, weights: Any = None,
               trajectory_frames: Any = None) -> "Dataset":
        """Appends frames to a growing dataset (a simulation still running):
        POST /v1/datasets/{id}/frames. ``frames`` is what upload() takes --
        a file of one frame or several (its format from its extension, or
        ``format``), one frame of points ((N, 3), or (N, 4) with weights),
        several frames of points ((F, N, 3)), an MDAnalysis or ASE object
        (``trajectory_frames`` picks its frames) -- each frame the dataset's
        atoms in their order. Several frames of points go one append a frame
        (raw float64, or JSON with weights: no box, no unit); frames in
        periodic boxes come in a file, or as an MDAnalysis or ASE object.
        Each is sent as starting at this dataset's frame count (``?at=``),
        so calling append() again after an error that may have hidden a
        stored append does not append twice. Returns self, with ``n`` and
        ``frames`` as the daemon now has them; HistdError (409) once the
        dataset is sealed, (422) for frames of other atoms, with the
        daemon's sentence."""
        if _is_frames(frames):  # one append a frame, each one whole
            for k, frame in enumerate(frames):
                self.append(frame, weights=None if weights is None else weights[k])
            return self
        query, body, size, f = _encode(frames, format, weights, trajectory_frames)
        query["at"] = str(self.frames)
        try:
            data = self.client._request(
                "POST", "/v1/datasets/%s/frames?%s" % (self.id, urllib.parse.urlencode(query)),
                body, {"Content-Length": str(size), "Content-Type": "application/octet-stream"},
                timeout=max(self.client.timeout, 600))
        finally:
            if f is not None:
                f.close()
        self._set(json.loads(data))
        return self

    def seal(self) -> "Dataset":
        """Seals a growing dataset: it takes no more frames, and the jobs that
        follow it end with the result of every frame. Returns self."""
        self._set(self.client._call("POST", "/v1/datasets/%s/seal" % self.id))
        return self

    def __repr__(self) -> str:
        return "<histd.Dataset %s: %d points%s>" % (self.id[:12], self.n,
                                                    ", box %s" % self.box if self.box else "")


class Job:
    """A submitted job. ``id``, ``status`` and ``progress`` (0 to 1) as of the
    last ``refresh()`` (``wait()`` refreshes); ``doc`` the job document."""

    def __init__(self, client: "Client", doc: Dict[str, Any]) -> None:
        self.client = client
        self._set(doc)

    def _set(self, doc: Dict[str, Any]) -> None:
        self.doc = doc
        self.id: str = doc["id"]
        self.status: str = doc["status"]
        self.progress: float = float(doc.get("progress") or 0)

    @property
    def done(self) -> bool:
        """Whether the job has ended (succeeded, failed or cancelled)."""
        return self.status in ("succeeded", "failed", "cancelled")

    def refresh(self, wait: float = 0) -> "Job":
        """Reads the job again; with wait > 0, long-polls up to that many
        seconds for it to end."""
        path = "/v1/jobs/%s?summary=true" % self.id
        if wait > 0:
            path += "&wait=%g" % wait
        self._set(self.client._call("GET", path, timeout=wait + self.client.timeout))
        return self

    def cancel(self) -> "Job":
        """Asks the daemon to cancel the job (a running job stops within a
        second; wait() then raises JobFailed)."""
        self._set(self.client._call("DELETE", "/v1/jobs/" + self.id))
        return self

    def wait(self, timeout: Optional[float] = None, progress: Optional[bool] = None) -> Result:
        """Waits for the job and returns its result, showing a progress bar
        (tqdm's when installed; ``progress=None``: only on a terminal or in
        Jupyter). Ctrl-C (KeyboardInterrupt) cancels the job on the daemon,
        then propagates. Raises JobFailed if the job failed or was cancelled,
        TimeoutError after `timeout` seconds (the job goes on)."""
        bar = None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:  # from the first moment: a Ctrl-C while the bar is made cancels too
            bar = Progress(progress, "histd job " + self.id[:8])
            while not self.done:
                step = 1.0 if bar.enabled else 10.0
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError("job %s is still %s after %gs" %
                                           (self.id, self.status, timeout))
                    step = min(step, left)
                self.refresh(wait=step)
                bar.update(self.progress, self.status)
            bar.update(1.0 if self.status == "succeeded" else self.progress, self.status)
        except KeyboardInterrupt:
            try:  # a running job stops within a second: wait for it, so status says so
                self.cancel()
                if not self.done:
                    self.refresh(wait=5)
            except (HistdError, KeyboardInterrupt):  # out of reach, or a second Ctrl-C
                pass
            raise
        finally:
            if bar is not None:
                bar.close()
        return self.result()

    def updates(self, timeout: Optional[float] = None) -> Iterator[Result]:
        """The job's results as they come, over its events stream (GET
        /v1/jobs/{id}/events, no polling): for a job that follows a growing
        dataset (``follow=True``), the latest result after each update (each
        a whole result of the frames so far, its ``frames`` says how many),
        then the final one once the dataset is sealed; for any other job,
        its result once it succeeds. ``status`` and ``progress`` follow the
        events. Raises JobFailed if the job fails or is cancelled,
        TimeoutError when the stream is silent for ``timeout`` seconds (the
        daemon sends a comment every 15 s; default: the client's timeout,
        at least 60 s)."""
        last = -1  # the frames of the last result given
        for name, data in self.client._events(self.id, timeout):
            if name == "progress":
                self.status = data.get("status", self.status)
                self.progress = float(data.get("progress") or 0)
            elif name == "update" and data.get("frames", 0) > last:
                try:
                    res = self._fetch()  # (the latest: it may count more frames already)
                except HistdError as e:
                    # the job ended between its update and this fetch and
                    # its result is the final one, which the end event
                    # brings (a daemon before 2026-11-28 answered 409 while
                    # it handed the result over)
                    if e.status != 409:
                        raise
                    continue
                last = res.frames
                yield res
            elif name == "end":
                self._set(data)
                break
        else:  # the stream ended without the job's end (the daemon stopped)
            self.refresh()
            if not self.done:
                raise HistdError(0, "the events stream of job %s ended before the job "
                                    "did" % self.id)
        if self.status != "succeeded":
            raise JobFailed(self.doc)
        if (self.doc.get("result") or {}).get("frames", last + 1) != last:
            yield self._fetch()

    def result(self) -> Result:
        """The result of a succeeded job (.npz when numpy is installed, else
        JSON), or a following job's latest; JobFailed if it failed or was
        cancelled, HistdError (409) if it has none yet."""
        if self.status in ("failed", "cancelled"):
            raise JobFailed(self.doc)
        if "result" not in self.doc:
            self.refresh()
        if self.status in ("failed", "cancelled"):
            raise JobFailed(self.doc)
        return self._fetch()

    def _fetch(self) -> Result:
        path = "/v1/jobs/%s/result" % self.id
        # the .npz holds every field (the schema's), arrays exact and typed;
        # a following job's result changes while it runs: one JSON request
        # reads one whole result
        if have_numpy() and not (self.doc.get("follow") and not self.done):
            raw = self.client._request("GET", path + "?format=npz")
            return Result.from_npz(raw, self.doc.get("result") or {}, self.id,
                                   self.client.schema())
        return Result(self.client._call("GET", path), job=self.id, schema=self.client.schema())

    def __repr__(self) -> str:
        return "<histd.Job %s %s %.0f%%>" % (self.id[:12], self.status, 100 * self.progress)


class Client:
    """A histd daemon at ``url`` (e.g. "http://127.0.0.1:8080"), with its
    bearer ``token`` if it runs with --token. ``timeout``: seconds for one
    request (waits add theirs).

    Data that a statistics call uploads for you (arrays, MDAnalysis and ASE
    objects, files) is temporary: ``close()`` deletes it, and so does the
    end of ``with histd.Client(...) as c:``. ``expires`` (seconds, or
    "90m", "12h", "30d") also has the daemon delete those uploads that long
    after each is stored, should this process never close the client."""

    def __init__(self, url: str = "http://127.0.0.1:8080", token: Optional[str] = None,
                 timeout: float = 60, expires: Union[None, float, str] = None) -> None:
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("url must be http://host:port or https://host:port, got %r" % url)
        self.url = url.rstrip("/")
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.expires = expires
        self._temporary: List[Dataset] = []

    def close(self) -> None:
        """Deletes the temporary uploads this client made (those it created:
        a dataset that was stored already is someone else's and stays). One
        that a queued or running job still uses stays too (its ``expires``,
        if any, takes it later)."""
        while self._temporary:
            ds = self._temporary.pop()
            try:
                ds.delete()
            except HistdError as e:
                if e.status not in (404, 409):
                    raise

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- HTTP ----

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout, blocksize=UPLOAD_BLOCK)

    def _request(self, method: str, path: str, body: Any = None,
                 headers: Optional[Dict[str, str]] = None,
                 timeout: Optional[float] = None) -> bytes:
        """Sends one request; returns the body of a 2xx answer, else raises
        HistdError with the daemon's sentence."""
        return self._exchange(method, path, body, headers, timeout)[1]

    def _exchange(self, method: str, path: str, body: Any = None,
                  headers: Optional[Dict[str, str]] = None,
                  timeout: Optional[float] = None) -> Tuple[int, bytes]:
        """_request, with the answer's status."""
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        conn = self._connection(timeout or self.timeout)
        try:
            conn.request(method, self._prefix + path, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read()
        except OSError as e:
            raise HistdError(0, "cannot reach histd at %s: %s" % (self.url, e)) from e
        finally:
            conn.close()
        if 200 <= resp.status < 300:
            return resp.status, data
        ctype = resp.getheader("Content-Type", "")
        problem = None
        if "json" in ctype:
            try:
                problem = json.loads(data)
            except ValueError:
                problem = None
        if isinstance(problem, dict) and "detail" in problem:
            raise HistdError(resp.status, str(problem["detail"]), str(problem.get("title", "")),
                             problem)
        raise HistdError(resp.status, "histd answered %d %s: %s" % (
            resp.status, resp.reason, data[:200].decode(errors="replace")), resp.reason)

    def _events(self, job_id: str, timeout: Optional[float] = None
                ) -> Iterator[Tuple[str, Dict[str, Any]]]:
        """GET /v1/jobs/{id}/events: its (event, data) pairs as they come."""
        h = {"Accept": "text/event-stream"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        conn = self._connection(timeout or max(self.timeout, 60))
        try:
            try:
                conn.request("GET", self._prefix + "/v1/jobs/%s/events"
                             % urllib.parse.quote(job_id), headers=h)
                resp = conn.getresponse()
            except OSError as e:
                raise HistdError(0, "cannot reach histd at %s: %s" % (self.url, e)) from e
            if resp.status != 200:
                data = resp.read()
                try:
                    problem = json.loads(data)
                except ValueError:
                    problem = None
                if isinstance(problem, dict) and "detail" in problem:
                    raise HistdError(resp.status, str(problem["detail"]),
                                     str(problem.get("title", "")), problem)
                raise HistdError(resp.status, "histd answered %d %s" % (resp.status, resp.reason))
            name, lines = None, []
            while True:
                try:
                    raw = resp.readline()
                except OSError as e:  # socket.timeout is one
                    raise TimeoutError("no event from job %s for %ss" % (
                        job_id, timeout or max(self.timeout, 60))) from e
                if not raw:
                    return
                line = raw.decode("utf-8").rstrip("\r\n")
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    lines.append(line[5:].lstrip(" "))
                elif line == "" and lines:
                    yield name or "message", json.loads("\n".join(lines))
                    name, lines = None, []
        finally:
            conn.close()

    def _call(self, method: str, path: str, doc: Any = None,
              timeout: Optional[float] = None) -> Any:
        """A JSON request and its JSON answer (None for an empty one)."""
        body, headers = None, {}
        if doc is not None:
            body = json.dumps(doc).encode()
            headers["Content-Type"] = "application/json"
        data = self._request(method, path, body, headers, timeout)
        return json.loads(data) if data else None

    # ---- the daemon ----

    def health(self) -> Dict[str, Any]:
        """GET /healthz."""
        return self._call("GET", "/healthz")

    def kernels(self) -> List[Dict[str, Any]]:
        """GET /v1/kernels: every kernel, and whether this daemon runs it."""
        return self._call("GET", "/v1/kernels")["kernels"]

    def devices(self) -> Dict[str, Any]:
        """GET /v1/devices: the daemon's CPU and GPUs."""
        return self._call("GET", "/v1/devices")

    def schema(self) -> Optional[List[Dict[str, Any]]]:
        """GET /v1/schema: the fields a result may hold, as the daemon
        lists them (asked once, then kept); None from a daemon too old to
        have it, whose results are then read by their members' values."""
        if not hasattr(self, "_schema"):
            try:
                self._schema = self._call("GET", "/v1/schema")["fields"]
            except HistdError as e:
                if e.status != 404:
                    raise
                self._schema = None
        return self._schema

    # ---- datasets ----

    def upload(self, points_or_path: Data, format: Optional[str] = None,
               name: Optional[str] = None, *, weights: Any = None, frames: Any = None,
               temporary: bool = False, expires: Union[None, float, str] = None,
               growing: bool = False) -> Dataset:
        """Uploads a point set and returns its Dataset:

        - a file path, streamed, of any size; its format from its extension
          unless `format` names one of json, csv, xyz, f64, f32, lammps, dcd,
          xtc, trr, netcdf, gro, pdb;
        - points: an (N, 3) array or list of triples (sent as float64), or
          (N, 4) with a weight w a point; or `weights`, one a point;
        - an MDAnalysis Universe or AtomGroup (every frame of its trajectory,
          or `frames`: a slice or ``u.trajectory[a:b:c]``), a sliced
          trajectory ``u.trajectory[a:b:c]`` itself (positions only), an ASE
          Atoms or a list of them: one upload of every frame with its box
          and the atoms' elements, names, residue names and numbers and
          molecules (MDAnalysis's fragments, molnums or residues), so that
          selections and ``exclude="molecule"`` work; `weights` one an atom.
          Written as extended XYZ (Angstrom) to a temporary file a frame at
          a time, then streamed.

        ``temporary``: close() deletes it. ``expires`` (seconds, or "90m",
        "12h", "30d"): the daemon deletes it that long after it is stored;
        temporary uploads take the client's ``expires`` by default.

        ``growing``: a dataset of a simulation still running, which
        ``Dataset.append()`` adds frames to until ``Dataset.seal()``; its id
        is its own (an identical upload is another dataset), and jobs
        submitted with ``follow=True`` keep their result current as its
        frames arrive (``Job.updates()``)."""
        query: Dict[str, str] = {}
        if growing:
            query["growing"] = "true"
        if name is not None:
            query["name"] = name
        if expires is None and temporary:
            expires = self.expires
        if expires is not None:
            if isinstance(expires, bool) or not isinstance(expires, (int, float, str)):
                raise ValueError("expires must be seconds or a duration such as \"12h\", "
                                 "got %r" % (expires,))
            query["expires"] = expires if isinstance(expires, str) else repr(expires)
        more, body, size, f = _encode(points_or_path, format, weights, frames)
        query.update(more)
        try:
            return self._upload(query, body, size, temporary)
        finally:
            if f is not None:
                f.close()

    def upload_sky(self, ra: Any, dec: Any, *, dist: Any = None, z: Any = None, w: Any = None,
                   region: Any = None, regions: Optional[int] = None,
                   regions_like: Union[None, str, "Dataset"] = None,
                   omega_m: Optional[float] = None, name: Optional[str] = None,
                   temporary: bool = False, expires: Union[None, float, str] = None) -> Dataset:
        """Uploads a sky catalogue (sent as sky-json): RA and Dec in degrees,
        a comoving distance ``dist`` in Mpc/h or a redshift ``z`` (flat
        LambdaCDM, ``omega_m`` or 0.315), weights ``w``, and jackknife
        regions: ``region`` (a label a point), ``regions=K`` (K regions made
        on the sky by k-means), or ``regions_like`` (a stored catalogue,
        whose regions the points take: galaxies in their randoms' regions).
        The dataset keeps the points (x = dist u) beside RA, Dec and the
        distance; ``temporary`` and ``expires`` as upload()'s."""
        if (dist is None) == (z is None):
            raise ValueError("give the distances (dist=, Mpc/h) or the redshifts (z=), one of them")

        def values(v: Any, cast: Any = float) -> List[Any]:
            return [cast(x) for x in (v.tolist() if hasattr(v, "tolist") else v)]

        ra_list = values(ra)

        def column(v: Any, what: str, cast: Any = float) -> List[Any]:
            out = values(v, cast)
            if len(out) != len(ra_list):
                raise ValueError("%s has %d values for %d points" % (what, len(out), len(ra_list)))
            return out

        doc: Dict[str, Any] = {"ra": ra_list, "dec": column(dec, "dec")}
        doc["dist" if dist is not None else "z"] = column(dist if dist is not None else z,
                                                          "dist" if dist is not None else "z")
        if w is not None:
            doc["w"] = column(w, "w")
        if region is not None:
            doc["region"] = column(region, "region", int)
        query: Dict[str, str] = {"format": "sky-json"}
        if regions is not None:
            query["regions"] = str(int(regions))
        if regions_like is not None:
            query["regions_like"] = regions_like.id if isinstance(regions_like, Dataset) \
                else str(regions_like)
        if omega_m is not None:
            query["omega_m"] = repr(float(omega_m))
        if name is not None:
            query["name"] = name
        if expires is None and temporary:
            expires = self.expires
        if expires is not None:
            query["expires"] = expires if isinstance(expires, str) else repr(expires)
        body = json.dumps(doc, allow_nan=True).encode()
        return self._upload(query, body, len(body), temporary)

    def _upload(self, query: Dict[str, str], body: Any, size: int, temporary: bool) -> Dataset:
        status, data = self._exchange(
            "POST", "/v1/datasets?" + urllib.parse.urlencode(query), body,
            {"Content-Length": str(size), "Content-Type": "application/octet-stream"},
            timeout=max(self.timeout, 600))
        ds = Dataset(self, json.loads(data))
        if temporary and status == 201:  # one the daemon had already is not ours to delete
            self._temporary.append(ds)
        return ds

    def dataset(self, dataset_id: str) -> Dataset:
        """GET /v1/datasets/{id}."""
        return Dataset(self, self._call("GET", "/v1/datasets/" + urllib.parse.quote(dataset_id)))

    def datasets(self) -> List[Dataset]:
        """GET /v1/datasets: every stored dataset."""
        return [Dataset(self, d) for d in self._call("GET", "/v1/datasets")["datasets"]]

    def _dataset(self, data: Data, weights: Any = None, frames: Any = None) -> Dataset:
        """A Dataset; a dataset id (64 hex digits, not the name of a file),
        read; else what upload() takes, uploaded as a temporary upload."""
        stored = isinstance(data, Dataset) or (
            isinstance(data, str) and _DATASET_ID.match(data) and not os.path.exists(data))
        if stored and weights is not None:
            raise ValueError("weights= as values goes with points to upload; a stored "
                             "dataset has its own (weights=True uses them)")
        if isinstance(data, Dataset):
            return data
        if stored:
            return self.dataset(data)
        return self.upload(data, weights=weights, frames=frames, temporary=True)

    # ---- jobs ----

    def jobs(self, limit: int = 100) -> List[Job]:
        """GET /v1/jobs: the newest jobs first."""
        return [Job(self, d) for d in self._call("GET", "/v1/jobs?limit=%d" % limit)["jobs"]]

    def job(self, job_id: str) -> Job:
        """GET /v1/jobs/{id}."""
        return Job(self, self._call("GET", "/v1/jobs/%s?summary=true" % urllib.parse.quote(job_id)))

    def submit(self, data: Data, data_b: Optional[Data] = None, *,
               bucket_width: Optional[float] = None, buckets: Optional[int] = None,
               r_max: Optional[float] = None, edges: Optional[Sequence[float]] = None,
               log_bins: Optional[Sequence[float]] = None, box: Optional[Sequence[float]] = None,
               within: Optional[float] = None, weights: Any = None,
               kernel: Optional[str] = None, block_size: Optional[int] = None,
               precision: Optional[str] = None, threads: Optional[int] = None,
               devices: Optional[Sequence[int]] = None, nbins: Optional[int] = None,
               range: Optional[Sequence[float]] = None, frames: Any = None,
               **extra: Any) -> Job:
        """POST /v1/jobs: submits a job over `data` (a Dataset, a dataset id,
        or anything upload() takes, uploaded first as a temporary upload), or
        A x B over `data` and `data_b`. The parameters are the API's (README
        "Job parameters"): one way of binning (bucket_width [with buckets];
        r_max with buckets; edges; log_bins = [r_min, r_max, buckets]; within
        = a radius; or MDAnalysis's ``nbins`` and ``range=(lo, hi)``), a
        periodic ``box`` ([L], [Lx, Ly, Lz], LAMMPS's 6 or GROMACS's 9
        numbers), ``weights`` (True: the dataset's own; or values, one a
        point of `data`, uploaded with it), and the execution: kernel,
        block_size, precision ("exact" or "fast"), threads, devices.
        Trajectories take ``select_a``/``select_b`` ("element:O", "name:OW",
        "index:0-99", ...), ``exclude="molecule"``, ``frames`` (a slice,
        ``u.trajectory[a:b:c]`` or "START:STOP:STEP"; a trajectory in memory
        uploads only those frames), ``per_frame`` and ``topology`` (a Dataset,
        id, file or MDAnalysis Universe naming the atoms of a trajectory that
        has no names). A selection that matches none of the dataset's atoms
        is refused here, before the job is queued. Parameters left None are
        not sent (the daemon's defaults); unknown ones in `extra` are sent as
        given, and the daemon's 400 names the known ones."""
        needs_box = extra.pop("_needs_box", False)
        buckets, r_max, edges = _binning(nbins, range, buckets, r_max, edges, bucket_width,
                                         log_bins)
        values = weights is not None and not isinstance(weights, bool)
        memory = frames is not None and not isinstance(data, (Dataset, str, os.PathLike)) \
            and is_molecular(data)
        a = self._dataset(data, weights if values else None, frames if memory else None)
        if values:
            weights = True
        if memory:
            frames = None  # (uploaded are those frames only)
        body: Dict[str, Any] = {"dataset": a.id}
        b = self._dataset(data_b) if data_b is not None else None
        if b is not None:
            body["dataset_b"] = b.id
        if needs_box and box is None and a.box is None:
            raise ValueError("rdf needs a periodic box, and the dataset carries none (%s): pass "
                             "box=, or points with .dimensions (MDAnalysis) or .cell and pbc "
                             "(ASE), or a file with a box" % a.id[:12])
        given = dict(bucket_width=bucket_width, buckets=buckets, r_max=r_max, edges=edges,
                     log_bins=log_bins, box=box, within=within, weights=weights, kernel=kernel,
                     block_size=block_size, precision=precision, threads=threads,
                     devices=devices, frames=_frames_text(frames))
        given.update(extra)
        named = a
        if given.get("topology") is not None:  # a Dataset, an id, or a file to upload
            named = self._dataset(given["topology"])
            given["topology"] = named.id
        for key, ds in (("select_a", named), ("select_b", b or named)):
            if isinstance(given.get(key), str):
                _check_selection(ds, key, given[key])
        for k, v in given.items():
            if v is None:
                continue
            if k in ("edges", "log_bins", "rp_edges", "rp_log_bins", "box", "devices"):
                v = [float(x) if k != "devices" else int(x) for x in v]
            body[k] = v
        try:
            return Job(self, self._call("POST", "/v1/jobs", body))
        except HistdError as e:
            if "gives its atoms no" in e.detail and "topology" not in e.detail:
                e.detail += ("; or name them with topology= (a Dataset, dataset id or file of "
                             "a GRO or PDB of the same system, or an MDAnalysis Universe)")
                e.args = (e.detail,)
            raise

    # ---- one call, one result ----

    def histogram(self, data: Data, bucket_width: Optional[float] = None,
                  buckets: Optional[int] = None, *, progress: Optional[bool] = None,
                  timeout: Optional[float] = None, **params: Any) -> Result:
        """The distance histogram of `data`'s pairs: submit(), then
        Job.wait() (a progress bar; Ctrl-C cancels the job). Takes
        submit()'s parameters; returns the Result."""
        job = self.submit(data, bucket_width=bucket_width, buckets=buckets, **params)
        return job.wait(timeout=timeout, progress=progress)

    def rdf(self, data: Data, r_max: Optional[float] = None, buckets: Optional[int] = None,
            box: Optional[Sequence[float]] = None, data_b: Optional[Data] = None, *,
            progress: Optional[bool] = None, timeout: Optional[float] = None,
            **params: Any) -> Result:
        """g(r) and the coordination number over `buckets` bins up to `r_max`
        (or MDAnalysis's ``nbins=`` and ``range=(lo, hi)``) in a periodic box:
        `box`, or the dataset's own (each frame's: an MDAnalysis object's
        .dimensions, an ASE Atoms' .cell, a file's box); refused before the
        job runs when there is none. With data_b, g_AB(r). Also asks for
        MDAnalysis's normalisation (``norm="rdf"``, the result's ``rdf``;
        pass ``norm=None`` to leave it out), which ``as_mdanalysis()`` uses."""
        params.setdefault("norm", "rdf")
        if r_max is None and buckets is None and params.get("range") is None:
            raise ValueError("rdf needs r_max= and buckets=, or range=(lo, hi) and nbins=")
        job = self.submit(data, data_b, r_max=r_max, buckets=buckets, box=box, _needs_box=True,
                          **params)
        return job.wait(timeout=timeout, progress=progress)

    def site_rdf(self, data: Data, r_max: Optional[float] = None,
                 buckets: Optional[int] = None, data_b: Optional[Data] = None, *,
                 progress: Optional[bool] = None, timeout: Optional[float] = None,
                 **params: Any) -> Result:
        """Each point of A's own histogram against B (of A itself without
        data_b; a point never meets itself), every frame's summed: MDAnalysis's
        InterRDF_s, the site-specific g(r). ``result.point`` holds ``counts``
        (points x bins), ``partners``, ``below`` and, in a periodic box, ``g``
        (a point's counts over its partners' expectation); ``result.index``
        names each row's atom. Bins as in rdf (``nbins=``, ``range=`` too); select
        the sites with ``select_a=`` (and their partners with ``select_b=``)."""
        job = self.submit(data, data_b, r_max=r_max, buckets=buckets,
                          per_point_histogram=True, **params)
        return job.wait(timeout=timeout, progress=progress)

    def pair_counts(self, data: Data, data_b: Optional[Data] = None, *,
                    progress: Optional[bool] = None, timeout: Optional[float] = None,
                    **params: Any) -> Result:
        """Pair counts of A x B (or of A's own pairs without data_b) in any
        bins (edges=, log_bins=, bucket_width=, r_max= with buckets=), or
        within a radius (within=); weights=True adds the weighted sums."""
        job = self.submit(data, data_b, **params)
        return job.wait(timeout=timeout, progress=progress)

    def rp_pi(self, data: Data, data_b: Optional[Data] = None, *, pi_max: float,
              pi_bins: int, progress: Optional[bool] = None, timeout: Optional[float] = None,
              **params: Any) -> Result:
        """Pair counts in bins of r_p (across the line of sight) and pi
        (along it, |dz| for ``los="z"``, the default, or by the pair's
        midpoint, ``los="midpoint"``): DD of `data`, or DR / RR of A x B.
        r_p's bins as the histogram's (rp_edges= or edges=, rp_log_bins= or
        log_bins=, r_max= with buckets=), pi's ``pi_bins`` equal bins of
        [0, pi_max). ``result.counts`` (and ``weighted`` with weights=True)
        is r_p bins x pi bins, ``edges`` r_p's edges and ``edges2`` pi's;
        histd.estimators turns them into xi and w_p. With jackknife=True (sky
        catalogues with regions), ``result.jackknife["counts"]`` holds each
        region's counts, a row a region of every bin (reshape a row to
        counts' shape), for histd.estimators.jackknife."""
        job = self.submit(data, data_b, statistic="rp_pi", pi_max=pi_max, pi_bins=pi_bins,
                          **params)
        return job.wait(timeout=timeout, progress=progress)

    def s_mu(self, data: Data, data_b: Optional[Data] = None, *, mu_bins: int,
             mu_max: Optional[float] = None, progress: Optional[bool] = None,
             timeout: Optional[float] = None, **params: Any) -> Result:
        """Pair counts in bins of s (the pair's distance, binned as the
        histogram's: edges=, log_bins=, r_max= with buckets=) and mu = pi / s
        (``mu_bins`` equal bins of [0, mu_max], mu_max 1 unless given; mu =
        mu_max in the last bin; pi along ``los`` as rp_pi's): DD of `data`,
        or DR / RR of A x B. ``result.counts`` is s bins x mu bins,
        ``edges2`` mu's edges; histd.estimators.multipoles gives xi_0, xi_2,
        xi_4."""
        job = self.submit(data, data_b, statistic="s_mu", mu_bins=mu_bins, mu_max=mu_max,
                          **params)
        return job.wait(timeout=timeout, progress=progress)

    def neighbours(self, data: Data, within: float, data_b: Optional[Data] = None, *,
                   progress: Optional[bool] = None, timeout: Optional[float] = None,
                   **params: Any) -> Result:
        """For every point of `data`, its neighbours within `within` among the
        points of `data_b` (of `data` itself without it; a point is never its
        own neighbour): ``result.neighbours`` (a row per frame over several),
        with weights=True the sum of their weights (``neighbour_weights``);
        ``result.index`` names each row's point."""
        job = self.submit(data, data_b, within=within, per_point=True, **params)
        return job.wait(timeout=timeout, progress=progress)

    def nearest(self, data: Data, data_b: Optional[Data] = None, within: Optional[float] = None,
                *, progress: Optional[bool] = None, timeout: Optional[float] = None,
                **params: Any) -> Result:
        """For every point of `data`, its nearest other point of `data_b` (of
        `data` without it): ``result.nearest`` (its index, -1 where none is
        within `within`) and ``result.nearest_d`` (the distance, nan where none)."""
        job = self.submit(data, data_b, within=within, nearest=True, **params)
        return job.wait(timeout=timeout, progress=progress)

    def pairs_within(self, data: Data, r: float, data_b: Optional[Data] = None, *,
                     progress: Optional[bool] = None, timeout: Optional[float] = None,
                     **params: Any) -> Result:
        """Every pair with d <= r (the distance join): ``result.i``, ``result.j``
        (indices in the datasets; i < j for self pairs), ``result.d``, and
        ``result.frame`` over several frames."""
        job = self.submit(data, data_b, pairs_within=r, **params)
        return job.wait(timeout=timeout, progress=progress)

    def __repr__(self) -> str:
        return "<histd.Client %s>" % self.url


def _encode(data: Any, format: Optional[str], weights: Any, frames: Any
            ) -> Tuple[Dict[str, str], Any, int, Any]:
    """What upload() and Dataset.append() send for `data`: the query's
    format, the body (bytes, or an open file), its size, and the file to
    close after (None)."""
    if isinstance(data, (str, bytes, os.PathLike)):
        if weights is not None or frames is not None:
            raise ValueError("weights= and frames= go with points or a trajectory in "
                             "memory; a file carries its own weights (a w column), and a "
                             "job's frames= picks a stored trajectory's frames")
        path = os.fspath(data)
        path = path.decode() if isinstance(path, bytes) else path
        fmt = format_of_path(path, format)
        f = open(path, "rb")
        return {"format": fmt}, f, os.path.getsize(path), f
    if format is not None:
        raise ValueError("format goes with a file path; points are sent as float64, "
                         "molecular objects as extended XYZ")
    if is_molecular(data):
        f = tempfile.TemporaryFile(prefix="histd-")
        write_xyz(data, f, frames, weights)
        size = f.tell()
        f.seek(0)
        return {"format": "xyz"}, f, size, f
    if frames is not None:
        raise ValueError("frames= goes with a trajectory (an MDAnalysis Universe or "
                         "AtomGroup, a list of ASE Atoms); points are one frame")
    body, n, w = encode(data, weights)
    if w is None:
        return {"format": "f64"}, body, len(body), None
    # weights: JSON, whose numbers (repr) read back as the same float64
    xyz = memoryview(body).cast("d")
    doc = {"x": list(xyz[0::3]), "y": list(xyz[1::3]), "z": list(xyz[2::3]), "w": w}
    data = json.dumps(doc, allow_nan=True).encode()
    return {"format": "json"}, data, len(data), None


def _is_frames(data: Any) -> bool:
    """Whether data is several frames of points: (F, N, 3) or (F, N, 4)."""
    if have_numpy() and hasattr(data, "ndim"):
        return data.ndim == 3
    return (isinstance(data, (list, tuple)) and len(data) > 0 and
            isinstance(data[0], (list, tuple)) and len(data[0]) > 0 and
            isinstance(data[0][0], (list, tuple)))


def _binning(nbins: Optional[int], rng: Optional[Sequence[float]], buckets: Optional[int],
             r_max: Optional[float], edges: Optional[Sequence[float]],
             bucket_width: Optional[float], log_bins: Optional[Sequence[float]]) -> Tuple[Any, Any, Any]:
    """MDAnalysis's nbins and range=(lo, hi) as the API's buckets, r_max
    (lo = 0) or edges (np.linspace(lo, hi, nbins + 1), as np.histogram
    makes them); (buckets, r_max, edges)."""
    if nbins is not None:
        if buckets is not None:
            raise ValueError("nbins is buckets by MDAnalysis's name: give one of them")
        buckets = nbins
    if rng is None:
        return buckets, r_max, edges
    if r_max is not None or edges is not None or bucket_width is not None or log_bins is not None:
        raise ValueError("range=(lo, hi) is a way of binning: give it without r_max, edges, "
                         "bucket_width or log_bins")
    try:
        lo, hi = (float(v) for v in rng)
    except (TypeError, ValueError):
        raise ValueError("range must be two numbers (lo, hi), got %r" % (rng,)) from None
    if not (0 <= lo < hi < float("inf")):
        raise ValueError("range must be (lo, hi) with 0 <= lo < hi, got %r" % (rng,))
    if buckets is None:
        raise ValueError("range=(lo, hi) needs nbins= (or buckets=): how many bins")
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
        raise ValueError("nbins must be a whole number of bins from 1, got %r" % (buckets,))
    if lo == 0:
        return buckets, hi, None
    step = (hi - lo) / buckets
    return None, None, [lo + k * step for k in builtins_range(buckets)] + [hi]


builtins_range = range


def _frames_text(frames: Any) -> Optional[str]:
    """A job's frames: "START:STOP:STEP" from a slice or an MDAnalysis
    trajectory slice (its start, stop, step); a string as it is."""
    if frames is None or isinstance(frames, str):
        return frames
    if isinstance(frames, slice) or hasattr(frames, "trajectory"):
        parts = (frames.start, frames.stop, frames.step)
        if not all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts):
            raise ValueError("frames must be a slice of whole numbers, got %r" % (frames,))
        return ":".join("" if p is None else str(p) for p in parts)
    raise ValueError("frames must be a slice (slice(0, 100, 10)), u.trajectory[a:b:c] or "
                     "\"START:STOP:STEP\", got %r" % (frames,))


# the atoms summary's table of each selection kind it can check (GET /v1/datasets/{id})
_SELECTION_TABLES = {"element": "elements", "name": "names", "resname": "resnames",
                     "type": "types"}


def _ranges(items: List[str]) -> Optional[List[Tuple[int, int]]]:
    """"3", "0-99" as (lo, hi) pairs; None when one is not such."""
    out = []
    for it in items:
        lo, dash, hi = it.partition("-")
        try:
            out.append((int(lo), int(hi) if dash else int(lo)))
        except ValueError:
            return None
    return out


def _check_selection(ds: Dataset, key: str, text: str) -> None:
    """Refuses, before the job is queued, a selection that matches none of
    the dataset's atoms, as its atoms summary tells (element, name, resname,
    type, index; the daemon judges the rest, and a summary cut short)."""
    kind, colon, rest = text.partition(":")
    kind = kind.strip().lower()
    atoms = ds.doc.get("atoms") or {}
    per_frame = atoms.get("per_frame") or (ds.n // max(ds.frames, 1))
    items = [v.strip() for v in rest.split(",")]
    if not colon:
        return
    if kind == "index":
        r = _ranges(items)
        if r is not None and per_frame and all(lo >= per_frame for lo, _ in r):
            raise HistdError(422, "selection \"%s\" (%s) matches none of the %d atoms of a "
                                  "frame (indices run from 0 to %d)" % (
                                      text, key, per_frame, per_frame - 1))
        return
    table = atoms.get(_SELECTION_TABLES.get(kind, ""))
    if not table or "..." in table:
        return
    known = list(table)
    if kind == "type":
        r = _ranges(items)
        hit = r is None or any(lo <= int(k) <= hi for lo, hi in r for k in known)
    elif kind == "element":
        hit = any(v.lower() == k.lower() for v in items for k in known)
    else:
        hit = any(v in known for v in items)
    if not hit:
        raise HistdError(422, "selection \"%s\" (%s) matches none of the %d atoms: the "
                              "dataset's %s are %s" % (text, key, per_frame,
                                                      _SELECTION_TABLES[kind], ", ".join(known)))



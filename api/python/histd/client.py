"""The histd client: datasets, jobs and results over histd's HTTP API
(api/openapi.yaml), with the standard library's http.client."""
import http.client
import json
import os
import re
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Sequence, Union

from ._points import box_of, encode, format_of_path, have_numpy
from ._progress import Progress
from .result import Result

Points = Any  # an (N, 3) array-like, or an object with .positions (MDAnalysis, ASE)
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
    """An uploaded point set: ``id``, ``n`` (points), ``name``, ``doc`` (the
    daemon's document) and ``box`` (the periodic box of the object it came
    from, kept by the client: the daemon does not store boxes)."""

    def __init__(self, client: "Client", doc: Dict[str, Any],
                 box: Optional[List[float]] = None) -> None:
        self.client = client
        self.doc = doc
        self.id: str = doc["id"]
        self.n: int = int(doc.get("n", 0))
        self.name: Optional[str] = doc.get("name")
        self.box = box

    def delete(self) -> None:
        """Deletes the dataset on the daemon."""
        self.client._call("DELETE", "/v1/datasets/" + self.id)

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
            try:
                self.cancel()
            except HistdError:  # the daemon is out of reach: Ctrl-C still stops us
                pass
            raise
        finally:
            if bar is not None:
                bar.close()
        return self.result()

    def result(self) -> Result:
        """The result of a succeeded job (.npz when numpy is installed, else
        JSON); JobFailed if it failed or was cancelled, HistdError (409) if
        it has not ended."""
        if self.status in ("failed", "cancelled"):
            raise JobFailed(self.doc)
        if "result" not in self.doc:
            self.refresh()
        if self.status in ("failed", "cancelled"):
            raise JobFailed(self.doc)
        path = "/v1/jobs/%s/result" % self.id
        # the .npz holds every field (the schema's), arrays exact and typed
        if have_numpy():
            raw = self.client._request("GET", path + "?format=npz")
            return Result.from_npz(raw, self.doc.get("result") or {}, self.id,
                                   self.client.schema())
        return Result(self.client._call("GET", path), job=self.id, schema=self.client.schema())

    def __repr__(self) -> str:
        return "<histd.Job %s %s %.0f%%>" % (self.id[:12], self.status, 100 * self.progress)


class Client:
    """A histd daemon at ``url`` (e.g. "http://127.0.0.1:8080"), with its
    bearer ``token`` if it runs with --token. ``timeout``: seconds for one
    request (waits add theirs)."""

    def __init__(self, url: str = "http://127.0.0.1:8080", token: Optional[str] = None,
                 timeout: float = 60) -> None:
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

    # ---- HTTP ----

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout, blocksize=UPLOAD_BLOCK)

    def _request(self, method: str, path: str, body: Any = None,
                 headers: Optional[Dict[str, str]] = None,
                 timeout: Optional[float] = None) -> bytes:
        """Sends one request; returns the body of a 2xx answer, else raises
        HistdError with the daemon's sentence."""
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
            return data
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
               name: Optional[str] = None) -> Dataset:
        """Uploads a point set: a file path (streamed, of any size; its
        format from its extension unless `format` names one of json, csv,
        xyz, f64, f32, lammps, dcd, xtc, trr, netcdf, gro, pdb), or points: an
        (N, 3) array or list of triples, or an object with ``.positions`` (an
        MDAnalysis AtomGroup or Universe, an ASE Atoms), sent as float64. An
        object's box (``.dimensions`` or ``.cell``) is kept on the Dataset for
        rdf()."""
        query = {}
        if name is not None:
            query["name"] = name
        box = None
        if isinstance(points_or_path, (str, bytes, os.PathLike)):
            path = os.fspath(points_or_path)
            path = path.decode() if isinstance(path, bytes) else path
            query["format"] = format_of_path(path, format)
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                doc = json.loads(self._request(
                    "POST", "/v1/datasets?" + urllib.parse.urlencode(query), f,
                    {"Content-Length": str(size), "Content-Type": "application/octet-stream"},
                    timeout=max(self.timeout, 600)))
        else:
            if format is not None:
                raise ValueError("format goes with a file path; points are sent as float64")
            box = box_of(points_or_path)
            body, _ = encode(points_or_path)
            query["format"] = "f64"
            doc = json.loads(self._request(
                "POST", "/v1/datasets?" + urllib.parse.urlencode(query), body,
                {"Content-Type": "application/x-float64"}, timeout=max(self.timeout, 600)))
        return Dataset(self, doc, box)

    def dataset(self, dataset_id: str) -> Dataset:
        """GET /v1/datasets/{id}."""
        return Dataset(self, self._call("GET", "/v1/datasets/" + urllib.parse.quote(dataset_id)))

    def datasets(self) -> List[Dataset]:
        """GET /v1/datasets: every stored dataset."""
        return [Dataset(self, d) for d in self._call("GET", "/v1/datasets")["datasets"]]

    def _dataset(self, data: Data) -> Dataset:
        """A Dataset; a dataset id (64 hex digits, not the name of a file);
        else what upload() takes, uploaded."""
        if isinstance(data, Dataset):
            return data
        if isinstance(data, str) and _DATASET_ID.match(data) and not os.path.exists(data):
            return Dataset(self, {"id": data})
        return self.upload(data)

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
               within: Optional[float] = None, weights: Optional[bool] = None,
               kernel: Optional[str] = None, block_size: Optional[int] = None,
               precision: Optional[str] = None, threads: Optional[int] = None,
               devices: Optional[Sequence[int]] = None, **extra: Any) -> Job:
        """POST /v1/jobs: submits a job over `data` (a Dataset, a dataset id,
        or anything upload() takes, uploaded first), or A x B over `data` and `data_b`.
        The parameters are the API's (README "Job parameters"): one way of
        binning (bucket_width [with buckets]; r_max with buckets; edges;
        log_bins = [r_min, r_max, buckets]; within = a radius), a periodic
        ``box`` ([L], [Lx, Ly, Lz], LAMMPS's 6 or GROMACS's 9 numbers),
        ``weights``, and the execution: kernel, block_size, precision
        ("exact" or "fast"), threads, devices. Trajectories take
        ``select_a``/``select_b`` ("element:O", "name:OW", "index:0-99", ...),
        ``exclude="molecule"``, ``frames="START:STOP:STEP"``, ``per_frame``
        and ``topology`` (a Dataset, id or file naming the atoms of a
        trajectory that has no names). Parameters left None are not
        sent (the daemon's defaults); unknown ones in `extra` are sent as
        given, and the daemon's 400 names the known ones."""
        a = self._dataset(data)
        body: Dict[str, Any] = {"dataset": a.id}
        if data_b is not None:
            body["dataset_b"] = self._dataset(data_b).id
        given = dict(bucket_width=bucket_width, buckets=buckets, r_max=r_max, edges=edges,
                     log_bins=log_bins, box=box, within=within, weights=weights, kernel=kernel,
                     block_size=block_size, precision=precision, threads=threads,
                     devices=devices)
        given.update(extra)
        if given.get("topology") is not None:  # a Dataset, an id, or a file to upload
            given["topology"] = self._dataset(given["topology"]).id
        for k, v in given.items():
            if v is None:
                continue
            if k in ("edges", "log_bins", "box", "devices"):
                v = [float(x) if k != "devices" else int(x) for x in v]
            body[k] = v
        return Job(self, self._call("POST", "/v1/jobs", body))

    # ---- one call, one result ----

    def histogram(self, data: Data, bucket_width: Optional[float] = None,
                  buckets: Optional[int] = None, *, progress: Optional[bool] = None,
                  timeout: Optional[float] = None, **params: Any) -> Result:
        """The distance histogram of `data`'s pairs: submit(), then
        Job.wait() (a progress bar; Ctrl-C cancels the job). Takes
        submit()'s parameters; returns the Result."""
        job = self.submit(data, bucket_width=bucket_width, buckets=buckets, **params)
        return job.wait(timeout=timeout, progress=progress)

    def rdf(self, data: Data, r_max: float, buckets: int, box: Optional[Sequence[float]] = None,
            data_b: Optional[Data] = None, *, progress: Optional[bool] = None,
            timeout: Optional[float] = None, **params: Any) -> Result:
        """g(r) and the coordination number over `buckets` bins up to `r_max`
        in a periodic box: `box`, or the box of `data` (an MDAnalysis
        object's .dimensions, an ASE Atoms' .cell, a Dataset uploaded from
        one), or, for a file or a stored dataset, the box its file carries
        (each frame's own: an XTC's, a GRO's, a LAMMPS dump's). With data_b,
        g_AB(r)."""
        if box is None:
            box = data.box if isinstance(data, Dataset) else box_of(data)
        stored = isinstance(data, (str, os.PathLike, Dataset))  # a file, an id, an upload
        if box is None and not stored:
            raise ValueError("rdf needs a periodic box: pass box=, or points with .dimensions "
                             "(MDAnalysis) or .cell (ASE)")
        if box is not None:
            params["box"] = box
        job = self.submit(data, data_b, r_max=r_max, buckets=buckets, **params)
        result = job.wait(timeout=timeout, progress=progress)
        if box is None and not result.raw.get("volume"):
            raise ValueError("rdf needs a periodic box, and the dataset's file carries none: "
                             "pass box=")
        return result

    def pair_counts(self, data: Data, data_b: Optional[Data] = None, *,
                    progress: Optional[bool] = None, timeout: Optional[float] = None,
                    **params: Any) -> Result:
        """Pair counts of A x B (or of A's own pairs without data_b) in any
        bins (edges=, log_bins=, bucket_width=, r_max= with buckets=), or
        within a radius (within=); weights=True adds the weighted sums."""
        job = self.submit(data, data_b, **params)
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



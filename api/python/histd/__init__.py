"""histd: a client for the histd daemon (all-pairs 3-D distance statistics).

    import histd
    c = histd.Client("http://127.0.0.1:8080")
    r = c.rdf(universe.atoms, r_max=10, buckets=100)   # an MDAnalysis AtomGroup
    r.centers, r.g, r.coordination

Standard library only; numpy, when installed, gives numpy arrays and .npz
transfers; tqdm, when installed, draws the progress bar. histd.estimators
(numpy) turns (r_p, pi) and (s, mu) counts into xi, w_p and multipoles.
"""
from . import estimators
from .client import Client, Dataset, HistdError, Job, JobFailed
from .result import Result

__all__ = ["Client", "Dataset", "HistdError", "Job", "JobFailed", "Result", "estimators"]
__version__ = "0.1.0"

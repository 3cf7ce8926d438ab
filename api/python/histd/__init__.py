"""histd: a client for the histd daemon (all-pairs 3-D distance statistics).

    import histd
    c = histd.Client("http://127.0.0.1:8080")
    r = c.rdf(universe.atoms, r_max=10, buckets=100)   # an MDAnalysis AtomGroup
    r.centers, r.g, r.coordination

Standard library only; numpy, when installed, gives numpy arrays and .npz
transfers; tqdm, when installed, draws the progress bar.
"""
from .client import Client, Dataset, HistdError, Job, JobFailed
from .result import Result

__all__ = ["Client", "Dataset", "HistdError", "Job", "JobFailed", "Result"]
__version__ = "0.1.0"

"""A progress bar while a job runs: tqdm's when tqdm is installed (its
notebook widget in Jupyter), else a plain one on stderr."""
import sys
import warnings
from typing import Any, Optional


class Progress:
    """update(fraction, status) then close(); silent when disabled."""

    def __init__(self, enabled: Optional[bool], label: str) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty() or "ipykernel" in sys.modules
        self.enabled = enabled
        self.label = label
        self.bar: Any = None
        self.shown = -1
        if not enabled:
            return
        try:
            with warnings.catch_warnings():  # no ipywidgets: tqdm's text bar, quietly
                warnings.simplefilter("ignore")
                from tqdm.auto import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=1000, desc=label, unit="‰", leave=True,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining} {postfix}")

    def update(self, fraction: float, status: str) -> None:
        if not self.enabled:
            return
        permille = int(max(0.0, min(1.0, fraction)) * 1000)
        if self.bar is not None:
            if permille > self.bar.n:
                self.bar.update(permille - self.bar.n)
            self.bar.set_postfix_str(status, refresh=True)
            return
        if permille == self.shown:
            return
        self.shown = permille
        filled = permille * 30 // 1000
        sys.stderr.write("\r%s [%s%s] %5.1f%% %s " % (self.label, "#" * filled,
                                                     "." * (30 - filled), permille / 10, status))
        sys.stderr.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        elif self.shown >= 0:
            sys.stderr.write("\n")
            sys.stderr.flush()

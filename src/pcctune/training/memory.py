"""Peak memory of a stage, as the paper's memory table (Pcc-tuning Appendix D, Table 7) reports it.

On a GPU: ``torch.cuda.max_memory_allocated`` since the stage started. On a CPU: the peak resident
set size of the process since the stage started (Linux: ``VmHWM`` after resetting it through
``/proc/self/clear_refs``; elsewhere the process's lifetime peak, ``ru_maxrss``).
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from types import TracebackType

import torch

PROC = Path("/proc/self")


def _reset_cpu_peak() -> bool:
    try:
        (PROC / "clear_refs").write_text("5")  # 5: reset the peak RSS (VmHWM) to the current RSS
        return True
    except OSError:
        return False


def _cpu_peak_mb(since_reset: bool) -> float:
    if since_reset:
        for line in (PROC / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class PeakMemory:
    """``with PeakMemory() as memory: ...`` then ``memory.peak_mb`` and ``memory.method``."""

    def __init__(self) -> None:
        self.cuda = torch.cuda.is_available()
        self.method = "cuda_max_allocated" if self.cuda else "cpu_peak_rss"
        self.peak_mb = 0.0
        self._since_reset = False

    def __enter__(self) -> PeakMemory:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        else:
            self._since_reset = _reset_cpu_peak()
            if not self._since_reset:
                self.method = "cpu_peak_rss_lifetime"
        return self

    def so_far(self) -> float:
        """The peak in MB since ``__enter__``, read now (a checkpoint records it mid-stage)."""
        if self.cuda:
            return torch.cuda.max_memory_allocated() / 2**20
        return _cpu_peak_mb(self._since_reset)

    def __exit__(
        self, error_type: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.peak_mb = self.so_far()

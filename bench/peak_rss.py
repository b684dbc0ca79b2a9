"""The peak RSS a bench child reports, its own: shared by the benches that run each client in a child process."""

from __future__ import annotations

import resource


def peak_rss_mib() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: on Linux ru_maxrss survives exec, so a child
    started from a big parent would report the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

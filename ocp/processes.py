"""Whether a process of this host still runs: the pid a lock file names, and the time it names. Linux's /proc."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

PID_MAX = 4_194_304  # Linux's PID_MAX_LIMIT: no pid is larger (and 0 or less would name process groups)
# A process that started after its lock was written is not the run that wrote it (its pid reused). Both times are
# read on the wall clock, which may have been stepped forward since (NTP's first sync on a VM booted behind, an RTC
# kept in local time): up to this much later, it may still be the writer.
CLOCK_STEP = timedelta(hours=24)


def still_runs(pid: int, since: datetime) -> bool:
    """Whether `pid` may still be the run that locked at `since`: False only when provably not (no such
    process, a zombie, or one started more than CLOCK_STEP after the lock was written: the pid reused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime "))
    except (OSError, StopIteration):
        return True
    fields = stat.rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
    started = boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return fields[0] != "Z" and started - CLOCK_STEP.total_seconds() <= since.timestamp()

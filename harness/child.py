"""Stopping a process a harness started itself (never one it did not): SIGTERM, then SIGKILL."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def stop(process: subprocess.Popen[Any], grace: float = 15) -> None:
    """SIGTERM to `process`, SIGKILL after `grace` seconds; waited for (reaped). Nothing if it has ended."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace)

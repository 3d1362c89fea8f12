"""Waiting on conditions, on the clock every lab process shares (CLOCK_MONOTONIC)."""

from __future__ import annotations

import time
from collections.abc import Callable

POLL = 0.02


class LabTimeout(RuntimeError):
    """Something the lab waited for did not happen in time."""


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    """Wait until `predicate()` holds; returns the time it was first seen holding."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise LabTimeout(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL)
    return time.monotonic()

"""Starting and stopping the local cloud's processes: exactly the ones `up` started.

Each process starts in a session of its own, its output in <home>/logs/<name>.log, and its PID
file records the session (the leader's PID) and the leader's start time. Stopping signals every
process of that session that started no earlier (gunicorn and oslo.service workers, Erlang's
helpers), never anything found by name, and ignores a PID file whose process is gone or whose
PID now belongs to another program.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.localcloud.layout import Layout

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Failed(RuntimeError):
    """A process died or did not answer: the message names its log."""


@dataclass(frozen=True)
class Process:
    name: str
    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    port: int | None = None  # answers TCP here when ready
    http: str | None = None  # or answers HTTP here (any status below 500)


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: the fields after it follow its closing parenthesis.
    return [str(pid), "comm", *text[text.rindex(")") + 2 :].split()]


def _start_time(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[21]) if fields else None


def _pid_file(layout: Layout, name: str) -> Path:
    return layout.run / f"{name}.pid"


def recorded(layout: Layout, name: str) -> tuple[int, int] | None:
    """(session, leader's start time) of a process this home started, if its PID file exists."""
    try:
        pid, started = _pid_file(layout, name).read_text().split()
        return int(pid), int(started)
    except (OSError, ValueError):
        return None


def members(session: int, started: int) -> list[int]:
    """The live processes of a session `up` started (none if it is gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[5]) == session and int(fields[21]) >= started and fields[2] != "Z":
                found.append(int(entry.name))
    return found


def running(layout: Layout, name: str) -> int | None:
    """The leader's PID when the process this home started is alive (not a stranger reusing its PID)."""
    record = recorded(layout, name)
    if record and _start_time(record[0]) == record[1] and _stat(record[0])[2] != "Z":
        return record[0]
    return None


def rss_mib(layout: Layout, name: str) -> int:
    record = recorded(layout, name)
    return rss_mib_of(members(*record)) if record else 0


def rss_mib_of(pids: Sequence[int]) -> int:
    """The resident memory of these processes together (those gone meanwhile count nothing)."""
    pages = 0
    for pid in pids:
        try:
            pages += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except OSError:
            pass
    return pages * os.sysconf("SC_PAGE_SIZE") // 2**20


def log_tail(layout: Layout, name: str, lines: int = 15) -> str:
    try:
        return "\n".join(layout.log(name).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start(layout: Layout, process: Process) -> int:
    """Starts the process unless this home's copy of it is running; returns the leader's PID."""
    pid = running(layout, process.name)
    if pid:
        return pid
    layout.run.mkdir(parents=True, exist_ok=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    with open(layout.log(process.name), "ab") as log:
        log.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} localcloud starts: {' '.join(process.argv)}\n".encode())
        log.flush()
        child = subprocess.Popen(
            list(process.argv),
            env={**os.environ, **process.env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=layout.home,
        )
    _pid_file(layout, process.name).write_text(f"{child.pid} {_start_time(child.pid)}\n")
    return child.pid


def _answers(process: Process) -> bool:
    if process.http:
        try:
            urllib.request.urlopen(process.http, timeout=5)
            return True
        except urllib.error.HTTPError as error:
            return error.code < 500
        except (OSError, ValueError):
            return False
    if process.port:
        with socket.socket() as probe:
            probe.settimeout(2)
            return probe.connect_ex(("127.0.0.1", process.port)) == 0
    return True


def wait_ready(layout: Layout, process: Process, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not _answers(process):
        if not running(layout, process.name):
            raise Failed(f"{process.name} exited; its log, {layout.log(process.name)}, ends:\n{log_tail(layout, process.name)}")
        if time.monotonic() > deadline:
            raise Failed(f"{process.name} did not answer within {timeout:.0f} s; its log, {layout.log(process.name)}, ends:\n{log_tail(layout, process.name)}")
        time.sleep(0.5)


def port_taken(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def stop(layout: Layout, names: Sequence[str], grace: float = 15) -> list[str]:
    """TERM to every process of these sessions at once, KILL what is left after `grace` seconds.
    Returns the names that were running."""
    sessions = {name: record for name in names if (record := recorded(layout, name))}
    alive = {name: members(*record) for name, record in sessions.items()}
    stopped = [name for name, pids in alive.items() if pids]
    for pids in alive.values():
        _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(members(*record) for record in sessions.values()):
        time.sleep(0.3)
    for record in sessions.values():
        _signal(members(*record), signal.SIGKILL)
    for name in sessions:
        _pid_file(layout, name).unlink(missing_ok=True)
    return stopped


def _signal(pids: Sequence[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

"""`python -m ocp status --all`: every stack of this project in the backend Pulumi is logged in to, each read as
`status --stack` reads it (ocp/status.py `report()`: read only), at most `jobs` at once in threads (each read is
mostly the Pulumi CLI's processes and the cloud's answers). A stack that cannot be opened or read is an entry
saying why (`Unread`); the others are still read.

The stacks are those `pulumi stack ls` lists for this project. One stack whose state does not parse makes
`pulumi stack ls` fail for the whole backend (Pulumi 3.274.1, a file backend: `failed to load checkpoint`), so
then the stack files are listed from the backend's storage as ocp/locks.py reads it (file:// and s3://): the
broken stack is reported beside the others instead of hiding them.

Exit code of the whole, for CI: 1 if any stack drifted or is unhealthy; else 2 if any could not be told, or
no stack was found (most likely the wrong backend); else 0."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from pulumi import automation as auto

from cluster.printable import shown
from ocp import locks
from ocp.status import ATTENTION, HEALTHY, UNKNOWN, Report

DEFAULT_JOBS = 4


@dataclass(frozen=True)
class Unread:
    """A stack that could not be opened, or whose reading failed as a whole."""

    stack: str
    read_at: datetime
    why: str

    verdict = "unknown"
    exit_code = UNKNOWN


Entry = Report | Unread


@dataclass(frozen=True)
class Fleet:
    project: str
    read_at: datetime
    listing_why: str  # "" where `pulumi stack ls` listed the stacks; else why the backend's files were listed instead
    entries: tuple[Entry, ...]

    @property
    def exit_code(self) -> int:
        codes = {entry.exit_code for entry in self.entries}
        if ATTENTION in codes:
            return ATTENTION
        return UNKNOWN if UNKNOWN in codes or not self.entries else HEALTHY

    def counts(self) -> dict[str, int]:
        verdicts = [entry.verdict for entry in self.entries]
        return {verdict: verdicts.count(verdict) for verdict in ("healthy", "drift", "unhealthy", "unknown")}


class Unlisted(Exception):
    """The backend's stacks could not be listed at all (the message says why)."""


def stack_names(workspace: auto.LocalWorkspace) -> tuple[list[str], str]:
    """This project's stacks in the backend, and "" or why they were listed from the backend's files."""
    try:
        return sorted(summary.name for summary in workspace.list_stacks()), ""
    except auto.CommandError as error:
        failed = _last_line(error)
    names = _stored_names(workspace, failed)
    return names, f"`pulumi stack ls` failed ({failed}): the stacks were listed from the backend's files"


def _last_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return shown((lines[-1] if lines else type(error).__name__)[-300:])


def _stored_names(workspace: auto.LocalWorkspace, failed: str) -> list[str]:
    """The stack files under `.pulumi/stacks/` of a file:// or s3:// backend (the layout ocp/locks.py reads)."""
    try:
        url = workspace.who_am_i().url or ""
        project = workspace.project_settings().name
    except auto.CommandError as error:
        raise Unlisted(f"`pulumi stack ls` failed ({failed}), and so did `pulumi whoami` ({_last_line(error)})") from error
    scheme = urlsplit(url).scheme
    if scheme not in locks.STORES:
        raise Unlisted(f"`pulumi stack ls` failed ({failed}); a {scheme or url}:// backend's files are not read here")
    try:
        store = locks.STORES[scheme](url, Path(workspace.work_dir))
        try:
            layout = (yaml.safe_load(store.read(".pulumi/meta.yaml")) or {}).get("version", 0)
        except OSError:
            layout = 0
        directory = f".pulumi/stacks/{project}" if layout else ".pulumi/stacks"
        return sorted(key.rsplit("/", 1)[-1].removesuffix(".json") for key in store.keys(directory))
    except (locks.Unreadable, yaml.YAMLError, AttributeError) as error:
        raise Unlisted(f"`pulumi stack ls` failed ({failed}), and the backend's files could not be listed ({shown(str(error)[-300:])})") from error


def read_all(
    names: list[str],
    open_stack: Callable[[str], auto.Stack],
    read: Callable[[auto.Stack], Report],
    jobs: int,
    progress: Callable[[str], None],
) -> tuple[Entry, ...]:
    """Each stack opened and read, `jobs` at once; `progress` hears one line per stack as it finishes. In the
    order of `names`."""
    selecting = threading.Lock()
    began = time.monotonic()

    def one(name: str) -> Entry:
        try:
            with selecting:  # `pulumi stack select` rewrites the workspace's settings file: one at a time
                stack = open_stack(name)
        except (locks.Refused, auto.CommandError) as error:
            return Unread(name, datetime.now(UTC), f"the stack could not be opened: {_last_line(error)}")
        try:
            return read(stack)
        except Exception as error:  # noqa: BLE001 - one stack's failure is its entry; the others are still read
            return Unread(name, datetime.now(UTC), f"reading it failed: {type(error).__name__}: {_last_line(error)}")

    found: dict[str, Entry] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="status") as pool:
        running = {pool.submit(one, name): name for name in names}
        for future in as_completed(running):
            entry = future.result()
            found[running[future]] = entry
            seconds = int(time.monotonic() - began)
            progress(f"[{len(found)}/{len(names)} {seconds // 60}m{seconds % 60:02d}s] {entry.stack}: {entry.verdict} (exit {entry.exit_code}){first_reason(entry)}")
    return tuple(found[name] for name in names)


def first_reason(entry: Entry) -> str:
    """The first reason of a stack's verdict, for its progress line and its table row."""
    if isinstance(entry, Unread):
        return f": {entry.why}"
    said = entry.problems() or entry.unknowns()
    return f": {said[0]}" + (f" (+{len(said) - 1} more)" if len(said) > 1 else "") if said else ""


def read_fleet(
    workspace: auto.LocalWorkspace,
    open_stack: Callable[[str], auto.Stack],
    read: Callable[[auto.Stack], Report],
    jobs: int = DEFAULT_JOBS,
    progress: Callable[[str], None] = lambda line: None,
) -> Fleet:
    """Every stack of the workspace's project in its backend (Unlisted where none could be listed)."""
    try:
        project = workspace.project_settings().name
    except Exception as error:  # noqa: BLE001 - no Pulumi.yaml that reads: nothing to list
        raise Unlisted(f"the project's Pulumi.yaml could not be read ({_last_line(error)})") from error
    names, why = stack_names(workspace)
    if why:
        progress(why)
    progress(f"reading {len(names)} stack{'s' if len(names) != 1 else ''} of project {project}, {max(1, jobs)} at once")
    return Fleet(project, datetime.now(UTC), why, read_all(names, open_stack, read, jobs, progress))

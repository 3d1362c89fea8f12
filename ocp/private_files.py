"""Files only their owner may read: the cluster's admin kubeconfig and kubeadmin password in the installer's
directory (ocp/driver.py), an offline plan's node files (tools/plan.py).

Written so that nobody else can read them or steer where they go, even where the directory sits in a shared path
(`ocp:installer.dir: /srv/shared/dev`): each directory from `top` down to the file is opened without following a
symbolic link and held open while the next is opened in it (os.open's dir_fd), so none can be swapped between its
check and the write; each must be the user's own and writable by nobody else (an existing one owned by another
user, or writable by its group or others, is refused, naming the key it comes from), and is made 0700 where missing
and narrowed to 0700 where looser. The file is written under a new name beside it (O_CREAT|O_EXCL|O_NOFOLLOW, its
mode from its first byte) and renamed over the old: a link planted where it goes is replaced, never followed. The
installer's run script checks its directory the same way, in shell (cluster/installer.py).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import stat
from pathlib import Path

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(Exception):
    """A directory on the way is not the user's alone: the message names the key and what to do."""


def check(directory: Path, key: str) -> None:
    """Refused where `directory` exists and may not hold private files (nothing where it is missing: it is made so)."""
    if directory.is_symlink() or directory.exists():
        os.close(_opened_top(directory, key, make=False))


def write(path: Path, data: str | bytes, key: str, top: Path | None = None, mode: int = 0o600) -> None:
    """`path` whole, with `mode` (0600: the owner's alone), every directory from `top` (default: the file's own) down
    to it the user's own (Refused otherwise, naming `key`)."""
    top = top or path.parent
    here, descriptor = top, _opened_top(top, key, make=True)
    try:
        for part in path.parent.relative_to(top).parts:
            here = here / part
            inner = _opened(descriptor, part, here, key, make=True)
            os.close(descriptor)
            descriptor = inner
        _replace(descriptor, path.name, data.encode() if isinstance(data, str) else data, mode)
    finally:
        os.close(descriptor)


def _opened_top(top: Path, key: str, make: bool) -> int:
    """`top`, open and checked; the path to it followed as the user named it (missing directories made 0700)."""
    if make:
        for parent in reversed([parent for parent in top.parents if not parent.exists()]):
            parent.mkdir(mode=0o700, exist_ok=True)
    above = os.open(top.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _opened(above, top.name, top, key, make)
    finally:
        os.close(above)


def _opened(above: int, name: str, path: Path, key: str, make: bool) -> int:
    """The directory `name` in the open directory `above` (at `path`), open and checked; made 0700 if missing."""
    if make:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=above)
    try:
        descriptor = os.open(name, _DIRECTORY, dir_fd=above)
    except OSError as error:
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.stat(name, dir_fd=above, follow_symlinks=False).st_mode):
                target = os.readlink(name, dir_fd=above)
                raise Refused(f"{key}: {path} is a symbolic link (to {target}), which this program does not follow: name the directory itself") from None
        raise Refused(f"{key}: {path} cannot be opened as a directory ({error.strerror})") from None
    found = os.fstat(descriptor)
    problem = _problem(found, path, key)
    if problem:
        os.close(descriptor)
        raise Refused(problem)
    if make and stat.S_IMODE(found.st_mode) & 0o077:
        os.fchmod(descriptor, 0o700)
    return descriptor


def _problem(found: os.stat_result, path: Path, key: str) -> str | None:
    me = os.geteuid()
    if found.st_uid != me:
        return (
            f"{key}: {path} belongs to {_user(found.st_uid)}, not to you ({_user(me)}): its owner could read or replace the "
            "cluster's secrets written there. Name a directory of your own"
        )
    writable = [who for bit, who in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "everyone")) if found.st_mode & bit]
    if writable:
        return (
            f"{key}: {path} is writable by {' and '.join(writable)} (mode {stat.S_IMODE(found.st_mode):o}): they could replace "
            f"the cluster's secrets written there with links of their own. `chmod 700 {path}`, or name a directory of your own"
        )
    return None


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _replace(directory: int, name: str, data: bytes, mode: int) -> None:
    """`name` in the open `directory`, written whole under a new name first, then renamed over whatever was there."""
    temporary = f".{name}.{secrets.token_hex(6)}.part"
    descriptor = os.open(temporary, _NEW_FILE, mode, dir_fd=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise

"""The stack's lock, read where Pulumi's DIY backend keeps it, before the driver makes anything.

The engine locks a stack for `pulumi up`, refresh and destroy (not for a preview): it writes
`.pulumi/locks/organization/<project>/<stack>/<uuid>.json` (`.pulumi/locks/<stack>/` in a backend of
the old layout) holding the run's pid, user, host and start time, then lists the directory again.
The lock has no lease: a killed run's stays until someone removes it. The engine's lock stays the
guard (a run that starts between this read and the engine's own is refused by the engine, and
`refused` words that the same way); this module names the holder and tells a live one from a dead one.

Backends are read through a Store per URL scheme (STORES): file:// (the files), and s3:// (an
S3-compatible store, such as Swift's s3api or Ceph RGW, read with boto3 from the URL Pulumi reads and the
same AWS credential chain). Any other backend's check is skipped, and the run says so; so is a store this
module could not read while Pulumi could."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

import yaml
from pulumi import automation as auto

from cluster.printable import shown
from ocp.processes import PID_MAX, still_runs

# Longer than any `pulumi up` or destroy of a cluster takes: another host's lock older than this
# was most likely left by a killed run (this machine cannot ask that host whether its pid runs).
STALE = timedelta(hours=6)
FLAG = "--clear-dead-lock"


class Store(Protocol):
    """A backend's storage, as the lock is kept there: keys are slash paths under its root."""

    def keys(self, prefix: str) -> list[str]: ...

    def read(self, key: str) -> bytes: ...

    def delete(self, key: str) -> None: ...

    def where(self, key: str) -> str: ...

    def removal(self, key: str) -> str: ...


@dataclass(frozen=True)
class FileStore:
    """A file:// backend (gocloud's fileblob: each object a file, its metadata in a `.attrs` file beside it)."""

    root: Path

    @classmethod
    def at(cls, url: str, work_dir: Path) -> FileStore:
        path = urlsplit(url)._replace(scheme="", query="", fragment="").geturl().removeprefix("//")
        return cls(work_dir / Path(path).expanduser())

    def keys(self, prefix: str) -> list[str]:
        directory = self.root / prefix
        if not directory.is_dir():
            return []
        return sorted(f"{prefix}/{path.name}" for path in directory.iterdir() if path.is_file() and path.name.endswith(".json"))

    def read(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def delete(self, key: str) -> None:
        for path in (self.root / key, self.root / f"{key}.attrs"):
            path.unlink(missing_ok=True)

    def where(self, key: str) -> str:
        return str(self.root / key)

    def removal(self, key: str) -> str:
        return f"rm {shlex.quote(str(self.root / key))}"


class Unreadable(Exception):
    """The backend's storage could not be read here (the message says why)."""


def _true(name: str, value: str) -> bool:
    if value.lower() in ("1", "t", "true"):
        return True
    if value.lower() in ("0", "f", "false"):
        return False
    raise Unreadable(f"{name}={value} is not a boolean")


# The s3:// URL's parameters as Pulumi 3.274.1 passes them to gocloud's s3blob (FACTS §13): those that
# change where or how the objects are read are used here; the rest only change writes or rates.
S3_IGNORED = {"ssetype", "kmskeyid", "hostname_immutable", "rate_limiter_capacity", "awssdk"}


@dataclass(frozen=True)
class S3Store:
    """An s3:// backend (gocloud's s3blob): `s3://BUCKET[/PREFIX]?endpoint=...&region=...&use_path_style=true`,
    its credentials from the AWS chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile), as Pulumi reads it."""

    bucket: str
    prefix: str = ""  # "" or "PREFIX/": Pulumi keeps .pulumi/ under it
    endpoint: str | None = None
    region: str | None = None
    path_style: bool = False
    profile: str | None = None
    options: tuple[tuple[str, object], ...] = ()  # botocore Config fields

    @classmethod
    def at(cls, url: str, work_dir: Path) -> S3Store:
        parts = urlsplit(url)
        query = {key: values[-1] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
        disable_ssl = _true("disableSSL", query.pop("disableSSL")) if "disableSSL" in query else False
        endpoint = query.pop("endpoint", None) or None
        if endpoint and "://" not in endpoint:  # Pulumi's scheme for a bare host: https unless disableSSL
            endpoint = f"{'http' if disable_ssl else 'https'}://{endpoint}"
        path_style, options = False, {}
        for key in ("use_path_style", "s3ForcePathStyle"):
            if key in query:
                path_style = _true(key, query.pop(key))
        s3: dict[str, object] = {"addressing_style": "path" if path_style else "virtual"}
        for key, field in (("dualstack", "use_dualstack_endpoint"), ("accelerate", "use_accelerate_endpoint")):
            if key in query:
                s3[field] = _true(key, query.pop(key))
        if "fips" in query:
            options["use_fips_endpoint"] = _true("fips", query.pop("fips"))
        if "anonymous" in query and _true("anonymous", query.pop("anonymous")):
            from botocore import UNSIGNED

            options["signature_version"] = UNSIGNED
        if "disable_https" in query and _true("disable_https", query.pop("disable_https")) and endpoint:
            endpoint = endpoint.replace("https://", "http://", 1)
        # Pulumi's default with an endpoint (a store other than AWS): checksums only where S3 requires them.
        default = "when_required" if endpoint and not os.environ.get("AWS_REQUEST_CHECKSUM_CALCULATION") else None
        for key in ("request_checksum_calculation", "response_checksum_validation"):
            value = query.pop(key, None) or (default if key.startswith("request") else None)
            if value:
                options[key] = value
        if "role" in query:
            raise Unreadable("the URL's role= (an assumed IAM role) is not read by the driver")
        region, profile = query.pop("region", None), query.pop("profile", None)
        unknown = sorted(set(query) - S3_IGNORED)
        if unknown:
            raise Unreadable(f"unknown parameter {', '.join(unknown)} in {url}")
        prefix = parts.path.strip("/")
        return cls(parts.netloc, f"{prefix}/" if prefix else "", endpoint, region, path_style, profile, (("s3", s3), *sorted(options.items())))

    def _client(self):
        import boto3  # here: a file:// backend needs none of it
        from botocore.config import Config

        session = boto3.session.Session(profile_name=self.profile)
        return session.client("s3", endpoint_url=self.endpoint, region_name=self.region, config=Config(retries={"max_attempts": 2}, **dict(self.options)))

    def keys(self, prefix: str) -> list[str]:
        pages = self._client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=f"{self.prefix}{prefix}/")
        found = [item["Key"] for page in _answer(pages.__iter__) for item in page.get("Contents", [])]
        return sorted(key.removeprefix(self.prefix) for key in found if key.endswith(".json") and "/" not in key.removeprefix(f"{self.prefix}{prefix}/"))

    def read(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            return _answer(lambda: self._client().get_object(Bucket=self.bucket, Key=self.prefix + key))["Body"].read()
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise FileNotFoundError(self.where(key)) from error
            raise

    def delete(self, key: str) -> None:
        _answer(lambda: self._client().delete_object(Bucket=self.bucket, Key=self.prefix + key))

    def where(self, key: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{key}"

    def removal(self, key: str) -> str:
        # Swift's own API with the `openstack` CLI, which a user of an OpenStack cloud has (its docs make the bucket
        # and the EC2 credential with it); the aws CLI is rarely there. As the project that holds the bucket (OS_CLOUD).
        return f"openstack object delete {shlex.quote(self.bucket)} {shlex.quote(self.prefix + key)}"


def _answer(call: Callable):
    """The store's answer; a failure to reach or authenticate to it becomes Unreadable (a missing object stays ClientError)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        result = call()
        return list(result) if not isinstance(result, dict) else result
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            raise
        raise Unreadable(str(error)) from error
    except BotoCoreError as error:
        raise Unreadable(str(error)) from error


# URL scheme -> the reader of that backend's storage.
STORES: dict[str, Callable[[str, Path], Store]] = {"file": FileStore.at, "s3": S3Store.at}


@dataclass(frozen=True)
class Lock:
    key: str
    pid: int
    user: str
    host: str
    since: datetime | None  # None: a file that does not read as a lock (being written, or damaged)

    def state(self, now: datetime) -> str:
        """live (its process runs on this host), gone (provably not: this host, pid gone or reused),
        elsewhere (another host's, within STALE), stale (another host's, older), unknown (unreadable)."""
        if self.since is None:
            return "unknown"
        if self.host != socket.gethostname():
            return "stale" if now - self.since > STALE else "elsewhere"
        return "live" if still_runs(self.pid, self.since) else "gone"

    def line(self, now: datetime, store: Store) -> str:
        if self.since is None:
            return f"  a lock that does not read as one (being written, or damaged): {shown(store.where(self.key))}"
        said = {
            "live": "its process runs on this host",
            "gone": "no such process on this host: the run was killed before it could unlock",
            "elsewhere": "on another host, which this machine cannot ask",
            "stale": f"on another host, and older than any run takes ({int(STALE.total_seconds() // 3600)} h): most likely left by a killed run",
        }[self.state(now)]
        return f"  {self.holder}, pid {self.pid}, since {self.since:%Y-%m-%d %H:%M:%S} UTC ({_age(now - self.since)} ago): {said} (lock {shown(store.where(self.key))})"

    @property
    def holder(self) -> str:  # escaped: whoever can write the store wrote it
        return shown(f"{self.user}@{self.host}")


def _age(age: timedelta) -> str:
    minutes = max(0, int(age.total_seconds() // 60))
    if minutes < 60:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h {minutes % 60} min"
    return f"{minutes // 1440} d {minutes % 1440 // 60} h"


@dataclass(frozen=True)
class Found:
    """The stack's locks in its backend's storage; `skipped`: why they could not be read."""

    stack: str
    store: Store | None = None
    locks: tuple[Lock, ...] = ()
    skipped: str = ""


def find(stack: auto.Stack) -> Found:
    try:
        url = stack.workspace.who_am_i().url or ""
    except auto.CommandError as error:
        return Found(stack.name, skipped=f"`pulumi whoami` failed ({str(error).strip()[-200:]})")
    scheme = urlsplit(url).scheme
    if scheme not in STORES:
        return Found(stack.name, skipped=f"the driver reads the locks of {' and '.join(f'{s}://' for s in STORES)} backends, this stack's is {scheme or url}://")
    parts = stack.name.split("/")
    project = parts[-2] if len(parts) > 1 else stack.workspace.project_settings().name
    try:
        store = STORES[scheme](url, Path(stack.workspace.work_dir))
        try:
            layout = (yaml.safe_load(store.read(".pulumi/meta.yaml")) or {}).get("version", 0)
        except OSError:
            layout = 0
        except Exception as error:  # noqa: BLE001 - a meta.yaml Pulumi would not read either (Unreadable: the store's own)
            raise error if isinstance(error, Unreadable) else Unreadable(f".pulumi/meta.yaml is not Pulumi's ({type(error).__name__})") from None
        directory = f".pulumi/locks/organization/{project}/{parts[-1]}" if layout else f".pulumi/locks/{parts[-1]}"
        return Found(stack.name, store, tuple(_read(store, key) for key in store.keys(directory)))
    except Unreadable as error:  # Pulumi read it (it selected the stack): say so and leave the guard to the engine
        return Found(stack.name, skipped=f"its store did not answer the driver ({str(error)[-300:]})")


def _read(store: Store, key: str) -> Lock:
    """The lock as Pulumi writes it; anything else (a pid no process has, JSON nested past the parser's depth,
    a field of another type) reads as no lock, never as the driver's error. Unreadable is the store's: find() says it."""
    try:
        content = json.loads(store.read(key))
        pid, user, host = content["pid"], content["username"], content["hostname"]
        if type(pid) is int and 0 < pid <= PID_MAX and isinstance(user, str) and isinstance(host, str):
            return Lock(key, pid, user, host, datetime.fromisoformat(content["timestamp"]).astimezone(UTC))
    except Exception as error:  # noqa: BLE001 - see above
        if isinstance(error, Unreadable):
            raise
    return Lock(key, 0, "", "", None)


# What Pulumi's s3:// backend says (gocloud's s3blob, aws-sdk-go-v2) when the store refuses the credential or the
# AWS chain found none; Swift's s3api answers SignatureDoesNotMatch for a wrong secret and for an unknown key alike.
S3_REFUSALS = (
    ("SignatureDoesNotMatch", "refused the credential"),
    ("InvalidAccessKeyId", "does not know the access key"),
    ("get credentials", "was given no credential"),
    ("AccessDenied", "refused this credential access to the bucket"),
)


class Refused(Exception):
    """The stack's state store refused the credential: nothing was done (the message names the variables)."""


def opened(name: str, select: Callable[[], auto.Stack]) -> auto.Stack:
    """The stack `select` opens; Refused, in words, where its s3:// store refused the credential."""
    try:
        return select()
    except auto.CommandError as error:
        refused = store_refused(name, error)
        if refused:
            raise Refused(refused) from error
        raise


def store_refused(name: str, error: auto.CommandError) -> str | None:
    """The words for a stack Pulumi could not open because its s3:// store refused the credential (None: another failure)."""
    text = str(error)
    if "operation error S3" not in text:
        return None
    said = next((said for code, said in S3_REFUSALS if code in text), None)
    if said is None:
        return None
    found = re.search(r"api error (\w+)", text)
    return (
        f"stack {name}: its state store (the s3:// backend) {said}{f' ({found.group(1)})' if found else ''}, so nothing was done here. "
        "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to an EC2 credential of the project that holds the bucket "
        "(`openstack ec2 credentials list` shows yours; `openstack ec2 credentials create` makes one), "
        "and AWS_EC2_METADATA_DISABLED=true off AWS; then run the same command again."
    )


class Locked(Exception):
    """Another run holds the stack's lock (or held it and died): the message says whose and what to do."""


def check(stack: auto.Stack, say: Callable[[str], None], clear_dead: bool = False) -> None:
    """Raises Locked while a lock of the stack stands; with `clear_dead`, each lock whose process is
    provably gone from this host is removed first, and only those."""
    found = find(stack)
    if found.skipped:
        say(f"the stack's lock is not read before the run: {found.skipped}; the engine's own lock still refuses a second run")
        return
    now = datetime.now(UTC)
    locks = list(found.locks)
    if clear_dead and found.store is not None:
        for lock in [lock for lock in locks if lock.state(now) == "gone"]:
            found.store.delete(lock.key)
            locks.remove(lock)
            say(f"removed the dead lock of {lock.holder} (pid {lock.pid} no longer runs here): {shown(found.store.where(lock.key))}")
    if locks:
        raise Locked(_words(found, locks, now, clear_dead))


def refused(stack: auto.Stack, error: auto.ConcurrentUpdateError) -> str:
    """The engine refused the run for a lock taken after `check` read none: the same words, or the engine's own."""
    found = find(stack)
    if found.locks:
        return _words(found, list(found.locks), datetime.now(UTC), False)
    return f"stack {stack.name} is locked by another run ({str(error).strip()[-600:]}); run the same command again once it ended"


def _words(found: Found, locks: list[Lock], now: datetime, clear_dead: bool) -> str:
    assert found.store is not None
    states = {lock.state(now) for lock in locks}
    lines = [lock.line(now, found.store) for lock in locks]
    name = found.stack
    if states & {"live", "elsewhere", "unknown"}:  # a dead lock beside a live one: the live one decides
        return "\n".join([
            f"stack {name} is locked by a run in progress, so nothing was done here:", *lines,
            "Wait for it to end, then run the same command again"
            + (f" ({FLAG} removes only a lock whose process is gone from this host)." if clear_dead else "."),
        ])
    hosts = sorted({f"on {shown(lock.host)}: `ps -p {lock.pid}`" for lock in locks if lock.state(now) == "stale"})
    return "\n".join([
        f"stack {name} is locked by a run that is {'gone' if 'gone' in states else 'most likely gone'}, so nothing was done here:", *lines,
        "Its work may be half done; the next run goes on from the state. Clear the lock once you know no run of this stack is alive anywhere"
        + (f" ({'; '.join(hosts)}, or its CI job ended)" if hosts else "") + ":",
        *[f"  {shown(found.store.removal(lock.key))}   (that lock alone)" for lock in locks if lock.state(now) in ("gone", "stale")],
        *([f"  or run again with {FLAG} (it removes only a lock whose process is gone from this host)"] if "gone" in states else []),
        f"  or `pulumi cancel --stack {name} --yes`, which deletes every lock of the stack, a live run's too, and stops nothing: "
        "with a run alive, two runs would then write one state and one cloud.",
        f"Then run the same command again (if pulumi says pending operations: `python -m tools.recover --stack {name}`).",
    ])

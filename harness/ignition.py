"""The real Ignition (Debian's 2.14, from its dracut module) run on a config, for the tests.

    result = ignition.run(config, tmp_path / "node")         # fetch, then files into a scratch root
    assert result.ok, result.log
    result.files["/etc/hostname"].contents, result.units, result.enabled, result.fetched

`fetch` reads the config (`-platform file`), fetches what it merges or replaces from the real
endpoints, and writes the merged config (`result.fetched`); `files` writes files, links, units,
presets and users into a scratch root, then moved to `WORK/root` (Ignition's log names it where
it was made, under /tmp). Everything else stays under WORK: Ignition's cache, state and
temporary files, and its `/run` (a private tmpfs in a mount namespace of its own, so its journal
entries and `/run` writes never reach the host's). The scratch root holds what `files` needs of a
real one: `/etc/passwd`, `/etc/group` and an SELinux config. Debian builds Ignition with
relabelling always on, so it runs `setfiles` on what it wrote; there is no policy here to label
with, and labels are not what the tests check: a `setfiles` of WORK's own takes the list and does
nothing. Needs root (files are chowned; `useradd --root` for users) and `unshare`. With `netns`, Ignition
runs in a network namespace the test made (a node's subnet: the API VIP its pointer names on the
namespace's loopback), where a `ConfigServer(..., address=VIP, netns=...)` serves as the machine
config server would.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import http.server
import ipaddress
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BINARY = Path("/usr/lib/dracut/modules.d/30ignition/ignition")
# What the scratch root holds before Ignition runs; not reported as written.
SEED = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
    "etc/group": "root:x:0:\nwheel:x:10:\nsudo:x:27:\n",
    "etc/shadow": "root:*:19000:0:99999:7:::\n",
    "etc/gshadow": "root:*::\nwheel:*::\nsudo:*::\n",
    "etc/selinux/config": "SELINUX=disabled\nSELINUXTYPE=targeted\n",
}
RESULT_FILE = "/etc/.ignition-result.json"
PRESET = "/etc/systemd/system-preset/20-ignition.preset"
TIMEOUT = 120


def unavailable() -> str | None:
    """Why the real Ignition cannot run here, or None when it can."""
    if not BINARY.is_file():
        return f"the real Ignition is not installed ({BINARY}: Debian package 'ignition')"
    if os.geteuid() != 0:
        return "the real Ignition's files stage needs root (it chowns what it writes)"
    if shutil.which("unshare") is None:
        return "`unshare` (util-linux) is missing: Ignition's /run is kept private with it"
    return None


@dataclass(frozen=True)
class Written:
    mode: int
    contents: bytes
    uid: int
    gid: int


@dataclass
class Result:
    returncode: int
    log: str
    stage: str  # the last stage run: where it failed when it failed
    fetched: dict[str, Any] | None = None  # the config after fetch: merges and replaces resolved
    files: dict[str, Written] = field(default_factory=dict)  # by absolute path on the node
    links: dict[str, str] = field(default_factory=dict)
    directories: dict[str, int] = field(default_factory=dict)  # mode by path
    units: dict[str, str] = field(default_factory=dict)  # /etc/systemd/system/NAME by name
    enabled: set[str] = field(default_factory=set)
    disabled: set[str] = field(default_factory=set)
    users: dict[str, str] = field(default_factory=dict)  # the node's /etc/passwd lines by name

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def failure(self) -> str:
        """Ignition's reason, as its last CRITICAL line says it."""
        lines = [line for line in self.log.splitlines() if line.startswith("CRITICAL")]
        return lines[-1] if lines else ""


def scratch_root(work: Path) -> Path:
    root = work / "root"
    for name, text in SEED.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _setfiles(work: Path) -> Path:
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    setfiles = bin_dir / "setfiles"
    setfiles.write_text("#!/bin/sh\n# no SELinux policy here: take Ignition's list of paths and label nothing\ncat > /dev/null\n")
    setfiles.chmod(0o755)
    return bin_dir


def _ignition(stage: str, config: Path, work: Path, root: Path, timeout: float, netns: str | None) -> subprocess.CompletedProcess:
    for name in ("run", "tmp"):
        (work / name).mkdir(parents=True, exist_ok=True)
    command = [
        str(BINARY), "-platform", "file", "-stage", stage, "-root", str(root), "-log-to-stdout",
        "-config-cache", str(work / "run/ignition.json"), "-state-file", str(work / "run/state"),
        "-neednet", str(work / "run/neednet"), "-fetch-timeout", "20s",
    ]  # fmt: skip
    # A private /run: Ignition logs to the journal's socket there and may write under it.
    private = 'mount --make-rprivate / && mount -t tmpfs -o mode=0755 ignition-run /run && exec "$@"'
    environment = {
        "PATH": f"{_setfiles(work)}:/usr/sbin:/usr/bin:/sbin:/bin",
        "IGNITION_CONFIG_FILE": str(config),
        "TMPDIR": str(work / "tmp"),
        "HOME": str(work),
    }  # and no proxy variables of the caller's
    # unshare and sh exec: the PID is Ignition's, so a timeout stops Ignition itself.
    inside = ["ip", "netns", "exec", netns] if netns else []
    process = subprocess.Popen(
        [*inside, "unshare", "--mount", "sh", "-c", private, "ignition", *command],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        log, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()  # Ignition retries a failed fetch for ever, as a booting node would
        log, _ = process.communicate()
        log += f"CRITICAL : (harness) Ignition still running after {timeout} s, stopped\n"
    return subprocess.CompletedProcess(process.args, process.returncode, log, "")


def run(
    config: dict[str, Any] | str,
    work: Path,
    stages: tuple[str, ...] = ("fetch", "files"),
    timeout: float = TIMEOUT,
    netns: str | None = None,
) -> Result:
    """Run these stages of the real Ignition on `config` (a dict, or the JSON text a node gets)
    with WORK as the node's scratch space, inside network namespace `netns` where given (a node's
    addresses, such as the API VIP its pointer names); stops at the first stage that fails. A stage still
    running after `timeout` seconds is stopped and counts as failed (Ignition retries a fetch
    that fails for a reason that may pass, such as a refused connection or a 5xx, for ever)."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    work.mkdir(parents=True, exist_ok=True)
    source = work / "user.ign"
    source.write_text(config if isinstance(config, str) else json.dumps(config))
    # Ignition makes a user's ~/.ssh as that user: every directory above the root must let
    # others through, which a test's tmp_path (under a 0700 directory) does not. The root is
    # made in a directory of its own under /tmp and moved into WORK when Ignition is done.
    outer = Path(tempfile.mkdtemp(prefix="ignition-"))
    outer.chmod(0o711)
    log, returncode, stage = "", 0, ""
    try:
        root = scratch_root(outer)
        for stage in stages:
            done = _ignition(stage, source, work, root, timeout, netns)
            log += done.stdout
            returncode = done.returncode
            if returncode != 0:
                break
        shutil.move(root, work / "root")
    finally:
        shutil.rmtree(outer)
    root = work / "root"
    result = Result(returncode, log, stage)
    cache = work / "run/ignition.json"
    if cache.is_file():
        result.fetched = json.loads(cache.read_text())
    _read_root(root, result)
    return result


def _read_root(root: Path, result: Result) -> None:
    for path in sorted(root.rglob("*")):
        name = "/" + path.relative_to(root).as_posix()
        info = path.lstat()
        if path.is_symlink():
            result.links[name] = os.readlink(path)
        elif path.is_dir():
            result.directories[name] = info.st_mode & 0o7777
        elif path.relative_to(root).as_posix() not in SEED or path.read_text() != SEED[path.relative_to(root).as_posix()]:
            result.files[name] = Written(info.st_mode & 0o7777, path.read_bytes(), info.st_uid, info.st_gid)
    for name, written in result.files.items():
        if name.startswith("/etc/systemd/system/") and name.count("/") == 4:
            result.units[name.rsplit("/", 1)[1]] = written.contents.decode()
    preset = result.files.get(PRESET)
    for line in preset.contents.decode().splitlines() if preset else ():
        verb, _, unit = line.partition(" ")
        (result.enabled if verb == "enable" else result.disabled).add(unit.strip())
    passwd = root / "etc/passwd"
    for line in passwd.read_text().splitlines():
        result.users[line.split(":", 1)[0]] = line


# --- Endpoints for it to fetch from: a config server on loopback, over TLS with a CA of the test's ---


@dataclass(frozen=True)
class Authority:
    """A CA the test makes: `pem` goes into a config's certificateAuthorities."""

    pem: str
    key: Any
    name: str

    @classmethod
    def make(cls, name: str) -> Authority:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256())
        )  # fmt: skip
        return cls(cert.public_bytes(serialization.Encoding.PEM).decode(), key, name)

    def issue(self, directory: Path, address: str = "127.0.0.1") -> tuple[Path, Path]:
        """A server certificate for `address` (an IP SAN, as the MCS's carries the API VIP) and its key, as files."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, address)]))
            .issuer_name(x509.load_pem_x509_certificate(self.pem.encode()).subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self.key, hashes.SHA256())
        )  # fmt: skip
        directory.mkdir(parents=True, exist_ok=True)
        cert_file, key_file = directory / f"{self.name}-server.crt", directory / f"{self.name}-server.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        return cert_file, key_file


CLONE_NEWNET = 0x40000000


@contextlib.contextmanager
def _network_namespace(name: str | None):
    """The calling thread inside network namespace `name` (setns(2) moves one thread only), then
    back: a socket made meanwhile stays in that namespace, served from any thread."""
    if name is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    own, target = os.open("/proc/thread-self/ns/net", os.O_RDONLY), os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into network namespace {name}")
        try:
            yield
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back into the test's network namespace")
    finally:
        os.close(own)
        os.close(target)


@dataclass
class ConfigServer:
    """Serves `documents` (path -> bytes) on `address`:`port` (127.0.0.1 and any free port by
    default; inside network namespace `netns` where given, as a machine config server on the API
    VIP), over TLS when given a certificate and key (files); with `headers`, a request without them
    gets 401, as Glance answers an expired token. `requests` records (path, headers) of every request."""

    documents: dict[str, bytes]
    headers: dict[str, str] = field(default_factory=dict)
    certificate: tuple[Path, Path] | None = None
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    port: int = 0
    address: str = "127.0.0.1"
    netns: str | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.certificate else 'http'}://{self.address}:{self.port}"

    def __enter__(self) -> ConfigServer:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                server.requests.append((self.path, dict(self.headers.items())))
                status, body = 200, server.documents.get(self.path)
                if any(self.headers.get(name) != value for name, value in server.headers.items()):
                    status, body = 401, b'{"error": "The request you have made requires authentication."}'
                elif body is None:
                    status, body = 404, b"not found"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        with _network_namespace(self.netns):
            self._server = http.server.ThreadingHTTPServer((self.address, self.port), Handler)
        if self.certificate:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*map(str, self.certificate))
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

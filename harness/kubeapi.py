"""A real Kubernetes API server on loopback, for tests: etcd and kube-apiserver from the real
toolchain (`bash .ci/toolchain`, the `kubernetes` and `etcd` components of toolchain/pins.toml),
and on demand kube-controller-manager with only the controllers asked for (csrsigning, to
issue certificates for approved CSRs). Test harness, not product.

    with kubeapi.running(tmp_path) as api:
        api.kubectl("get", "namespaces")
        api.start_controller_manager("csrsigning")

Everything listens on 127.0.0.1 only, on free ports, and lives in the directory given: its
certificates (a cluster CA for the API server's serving cert and the admin's client cert,
O=system:masters; a separate signer CA for the csrsigning controller), etcd's data, the
kubeconfig, and each process's log (<name>.log). Leaving the block stops exactly the processes
it started, by their PIDs, and waits for them.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from harness import child
from tools import toolchain

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
LOOPBACK = "127.0.0.1"
SERVICE_RANGE = "10.0.0.0/24"


class KubeAPIError(Exception):
    pass


def missing() -> str | None:
    """Why the harness cannot run here (for pytest.skip), or None when every binary is built."""
    absent = [name for name in BINARIES if toolchain.binary(name) is None]
    return "; ".join(toolchain.missing(name) for name in absent) or None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


# --------------------------------------------------------------------------- certificates


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path

    def load_cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert.read_bytes())


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _write_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    path.chmod(0o600)


def make_ca(directory: Path, name: str, common_name: str) -> Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pair = Pair(directory / f"{name}.crt", directory / f"{name}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key)
    return pair


def make_leaf(
    directory: Path, name: str, ca: Pair, common_name: str, *, organization: str | None = None, server: bool = False, address: str = LOOPBACK
) -> Pair:
    ca_key = serialization.load_pem_private_key(ca.key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organization))
        .issuer_name(ca.load_cert().subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    )
    if server:
        names = [x509.DNSName(n) for n in ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")]
        addresses = [x509.IPAddress(ipaddress.ip_address(a)) for a in (address, next(ipaddress.ip_network(SERVICE_RANGE).hosts()).exploded)]
        builder = builder.add_extension(x509.SubjectAlternativeName([*names, *addresses]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    pair = Pair(directory / f"{name}.crt", directory / f"{name}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, pair.key)
    return pair


# --------------------------------------------------------------------------- processes


@dataclass
class KubeAPI:
    """A running etcd and kube-apiserver (and what else was started), in `directory`."""

    directory: Path
    # The API server's own address: any of loopback's 127.0.0.0/8, so that two played clusters can
    # both serve the 6443 their kubeconfigs name.
    address: str = LOOPBACK
    url: str = ""
    etcd_url: str = ""
    ca: Pair | None = None
    signer: Pair | None = None
    admin: Pair | None = None
    kubeconfig: Path | None = None
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    # ---- processes

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        if name in self.processes:
            raise KubeAPIError(f"{name} is already running (pid {self.processes[name].pid})")
        binary = toolchain.binary(name)
        if binary is None:
            raise KubeAPIError(toolchain.missing(name))
        with open(self.directory / f"{name}.log", "ab") as log:
            process = subprocess.Popen([str(binary), *args], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory)
        self.processes[name] = process
        return process

    def log(self, name: str, lines: int = 30) -> str:
        path = self.directory / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.is_file() else ""

    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self.processes.items()}

    def stop(self, grace: float = 15) -> None:
        """Stops exactly the processes this harness started, last started first: SIGTERM, then
        SIGKILL after `grace` seconds; each is waited for (reaped)."""
        for name in reversed(list(self.processes)):
            child.stop(self.processes.pop(name), grace)

    def _wait(self, name: str, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            process = self.processes[name]
            if process.poll() is not None:
                raise KubeAPIError(f"{name} exited ({process.returncode}) before {what}:\n{self.log(name)}")
            if ready():
                return
            if time.monotonic() > deadline:
                raise KubeAPIError(f"{name}: no {what} within {timeout:.0f} s:\n{self.log(name)}")
            time.sleep(0.5)

    # ---- etcd and the API server

    def start_etcd(self, timeout: float = 60) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://{LOOPBACK}:{client}"
        peer_url = f"http://{LOOPBACK}:{peer}"
        self._start(
            "etcd",
            [
                "--name=default",
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--initial-cluster-state=new",
                "--unsafe-no-fsync",  # a throwaway store: no fsync on every write
            ],
        )

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as answer:
                    return json.loads(answer.read()).get("health") == "true"
            except (OSError, ValueError):
                return False

        self._wait("etcd", healthy, timeout, "/health")

    def make_certificates(self) -> None:
        pki = self.directory / "pki"
        pki.mkdir(exist_ok=True)
        self.ca = make_ca(pki, "ca", "kubeapi-test-ca")
        self.signer = make_ca(pki, "signer", "kubeapi-test-csr-signer")
        make_leaf(pki, "apiserver", self.ca, "kube-apiserver", server=True, address=self.address)
        self.admin = make_leaf(pki, "admin", self.ca, "admin", organization="system:masters")
        _write_key(rsa.generate_private_key(public_exponent=65537, key_size=2048), pki / "service-account.key")

    def start_apiserver(self, timeout: float = 120, *, port: int | None = None, sni: tuple[Pair, str] | None = None, client_cas: tuple[Path, ...] = ()) -> None:
        """`port` a fixed one (a cluster's kubeconfig names 6443); `sni` another serving pair for
        a host name (a cluster's own certificate for api.<cluster>.<domain>); `client_cas`
        further CAs whose client certificates are accepted (that cluster's admin kubeconfig)."""
        assert self.ca and self.admin, "make_certificates first"
        pki = self.directory / "pki"
        port = port or free_port()
        self.url = f"https://{self.address}:{port}"
        client_ca = pki / "client-ca.crt"
        client_ca.write_bytes(b"".join(path.read_bytes() for path in (self.ca.cert, *client_cas)))
        extra = [f"--tls-sni-cert-key={sni[0].cert},{sni[0].key}:{sni[1]}"] if sni else []
        self._start(
            "kube-apiserver",
            [
                f"--etcd-servers={self.etcd_url}",
                f"--bind-address={self.address}",
                f"--advertise-address={self.address}",
                f"--secure-port={port}",
                f"--cert-dir={self.directory / 'apiserver-certs'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={client_ca}",
                f"--service-account-key-file={pki / 'service-account.key'}",
                f"--service-account-signing-key-file={pki / 'service-account.key'}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-cluster-ip-range={SERVICE_RANGE}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                # The `kubernetes` Service's endpoints would be 127.0.0.1, which Endpoints refuse.
                "--endpoint-reconciler-type=none",
                *extra,
            ],
        )
        context = self.ssl_context()

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=5, context=context) as answer:
                    return answer.status == 200
            except (OSError, urllib.error.URLError):
                return False

        self._wait("kube-apiserver", ready, timeout, "/readyz")
        self.write_kubeconfig()

    def ssl_context(self) -> ssl.SSLContext:
        assert self.ca and self.admin
        context = ssl.create_default_context(cafile=str(self.ca.cert))
        context.load_cert_chain(str(self.admin.cert), str(self.admin.key))
        return context

    def write_kubeconfig(self) -> None:
        assert self.ca and self.admin
        self.kubeconfig = self.directory / "kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": {"server": self.url, "certificate-authority": str(self.ca.cert)}}],
            "users": [{"name": "admin", "user": {"client-certificate": str(self.admin.cert), "client-key": str(self.admin.key)}}],
            "contexts": [{"name": "admin", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "admin",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
        self.kubeconfig.chmod(0o600)

    def embedded_kubeconfig(self, server: str | None = None, user: Pair | None = None) -> str:
        """The admin kubeconfig with the CA, certificate and key inside it, as the installer's
        auth/kubeconfig is (what a script gets as text); `server` another URL (a closed port),
        `user` another client pair (one the API does not trust, or a user without rights)."""
        assert self.ca and self.admin
        user = user or self.admin

        def data(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": {"server": server or self.url, "certificate-authority-data": data(self.ca.cert)}}],
            "users": [{"name": "admin", "user": {"client-certificate-data": data(user.cert), "client-key-data": data(user.key)}}],
            "contexts": [{"name": "admin", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "admin",
        }
        return json.dumps(config, indent=2) + "\n"

    def env(self) -> dict[str, str]:
        """An environment for clients: KUBECONFIG the admin's, kubectl's cache in the directory."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(self.directory / "kube-cache")}

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        binary = toolchain.binary("kubectl")
        if binary is None:
            raise KubeAPIError(toolchain.missing("kubectl"))
        result = subprocess.run([str(binary), *args], env=self.env(), input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise KubeAPIError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    # ---- kube-controller-manager

    def start_controller_manager(self, *controllers: str, timeout: float = 60) -> None:
        """kube-controller-manager running only `controllers` (e.g. csrsigning, signing with the
        signer CA), serving nothing (--secure-port=0)."""
        assert self.signer and self.kubeconfig, "start_apiserver first"
        self._start(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={','.join(controllers)}",
                f"--cluster-signing-cert-file={self.signer.cert}",
                f"--cluster-signing-key-file={self.signer.key}",
                "--secure-port=0",
                f"--bind-address={LOOPBACK}",
                "--leader-elect=false",
                "--use-service-account-credentials=false",
            ],
        )
        started = time.monotonic()
        # It has no endpoint to ask: it is up once it has run a few seconds without exiting.
        self._wait("kube-controller-manager", lambda: time.monotonic() - started > 2, timeout, "start")

    # ---- what listens

    def listening(self) -> dict[str, set[str]]:
        """The TCP addresses (ip:port) each running process listens on, from /proc."""
        sockets = _listening_sockets()
        found: dict[str, set[str]] = {}
        for name, process in self.processes.items():
            inodes = set()
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{process.pid}/fd"):
                    with contextlib.suppress(OSError):
                        target = os.readlink(f"/proc/{process.pid}/fd/{fd}")
                        if target.startswith("socket:["):
                            inodes.add(target[8:-1])
            found[name] = {sockets[inode] for inode in inodes if inode in sockets}
        return found


def _listening_sockets() -> dict[str, str]:
    """inode -> ip:port of every TCP socket in LISTEN state (IPv4 and IPv6)."""
    found = {}
    for path, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        with contextlib.suppress(OSError), open(path) as table:
            for line in list(table)[1:]:
                fields = line.split()
                if fields[3] != "0A":  # TCP_LISTEN
                    continue
                address, port = fields[1].split(":")
                raw = bytes.fromhex(address)
                # /proc prints each 32-bit word in host (little-endian) order.
                ordered = b"".join(raw[i : i + 4][::-1] for i in range(0, width, 4))
                found[fields[9]] = f"{ipaddress.ip_address(ordered)}:{int(port, 16)}"
    return found


@contextlib.contextmanager
def running(
    directory: Path,
    *,
    controllers: tuple[str, ...] = (),
    port: int | None = None,
    sni: tuple[Pair, str] | None = None,
    client_cas: tuple[Path, ...] = (),
    address: str = LOOPBACK,
) -> Iterator[KubeAPI]:
    """etcd and kube-apiserver (ready: /readyz answers 200) in `directory`, and
    kube-controller-manager when `controllers` are named; stopped on leaving, whatever happens.
    `port`, `sni`, `client_cas`: as KubeAPI.start_apiserver; `address` the API server's, on loopback."""
    directory.mkdir(parents=True, exist_ok=True)
    api = KubeAPI(directory, address=address)
    try:
        api.make_certificates()
        api.start_etcd()
        api.start_apiserver(port=port, sni=sni, client_cas=client_cas)
        if controllers:
            api.start_controller_manager(*controllers)
        yield api
    finally:
        api.stop()

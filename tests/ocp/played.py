"""An OpenShift cluster played on a real Kubernetes API server (harness/kubeapi.py), for the install
driver's tests. Test harness.

Real: etcd, kube-apiserver and the csrsigning controller; the API server serves the installer's
own certificate for api.<cluster>.<domain> (from the bootstrap's ignition) and accepts its admin
kubeconfig's client certificate, so the real `openshift-install wait-for` and the driver's
`oc`/`kubectl` talk to it as to a cluster; the CRDs (ClusterVersion, ClusterOperator, Etcd,
Route) come from the openshift/api module the installer is built with, read from the module
cache at test time. Played (nothing here runs RHCOS, kubelets or operators): what those write
into the API, in the order a live install writes it (../shared/FACTS.md):
- the masters register and are Ready during the bootstrap (the bootstrap's approve-csr serves them);
- each worker's kubelet asks for its client certificate (as the node bootstrapper), registers its
  Node once that is issued, then asks for its serving certificate (as itself); the Node is Ready
  once both are issued;
- the bootstrap hands over when told (`bootstrap_complete`): the kube-system/bootstrap ConfigMap
  and the etcd operator's EtcdBootstrapMemberRemoved;
- once every worker is Ready, the routers run: the default ingress certificate, the console's
  admitted Route, stable ClusterOperators and an Available ClusterVersion.
Besides, requests no approver may grant: another cluster's node, a wrong requester.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster.csr import CLIENT_SIGNER, NODE_BOOTSTRAPPER, SERVING_SIGNER
from harness import kubeapi
from harness.kubeapi import Pair

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ["digital signature", "client auth"]
SERVING = ["digital signature", "server auth"]
# CRDs of the openshift/api module, by path inside it.
CRDS = (
    "config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
    "config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml",
    "operator/v1/zz_generated.crd-manifests/0000_12_etcd_01_etcds-Default.crd.yaml",
    "route/v1/zz_generated.crd-manifests/routes-Default.crd.yaml",
)
OPERATORS = ("authentication", "console", "etcd", "ingress", "kube-apiserver", "machine-config", "network")


def openshift_api_module() -> Path:
    """The openshift/api module at the version the installer of the toolchain is built with (its
    go.mod in toolchain/modules), from the module cache (the Go proxy when it is not there)."""
    go_mod = (ROOT / "toolchain" / "modules" / "openshift-install" / "go.sum").read_text()
    found = re.search(r"^github\.com/openshift/api (v\S+?) h1:", go_mod, re.M)
    assert found, "toolchain/modules/openshift-install/go.sum names no github.com/openshift/api"
    done = subprocess.run(["go", "mod", "download", "-json", f"github.com/openshift/api@{found.group(1)}"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return Path(json.loads(done.stdout)["Dir"])


def ignition_files(ignition: Path) -> dict[str, bytes]:
    """path -> contents of every file an Ignition config writes (data URLs only)."""
    found = {}
    for entry in json.loads(ignition.read_text()).get("storage", {}).get("files", []):
        source = (entry.get("contents") or {}).get("source") or ""
        if source.startswith("data:"):
            head, _, data = source.partition(",")
            found[entry["path"]] = base64.b64decode(data) if head.endswith(";base64") else urllib.parse.unquote_to_bytes(data)
    return found


def cluster_certificates(assets: Path, scratch: Path) -> tuple[Pair, Path]:
    """From the installer's bootstrap config: the API's serving pair for api.<cluster>.<domain>
    (kube-apiserver-lb-server) and the CA bundle of the admin kubeconfig's client certificate."""
    files = ignition_files(assets / "bootstrap.ign")
    scratch.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in ("kube-apiserver-lb-server.crt", "kube-apiserver-lb-server.key", "admin-kubeconfig-ca-bundle.crt"):
        (scratch / name).write_bytes(files[f"/opt/openshift/tls/{name}"])
        (scratch / name).chmod(0o600)
        written[name] = scratch / name
    return Pair(written["kube-apiserver-lb-server.crt"], written["kube-apiserver-lb-server.key"]), written["admin-kubeconfig-ca-bundle.crt"]


def request_pem(common: str, organization: str | None = "system:nodes", dns=(), ips=()) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attributes))
    names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode()


def _ca_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ingress-operator@played")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class PlayedCluster:
    def __init__(self, api: kubeapi.KubeAPI, nodes: dict[str, str], cluster_domain: str, foreign: bool = True, running: frozenset[str] = frozenset()):
        """`running`: workers that joined already (day 2: registered and Ready from the start)."""
        self.api, self.nodes, self.domain = api, nodes, cluster_domain
        self.masters = sorted(n for n in nodes if "-master-" in n)
        self.running = sorted(running)
        self.workers = sorted(n for n in nodes if "-worker-" in n and n not in running)
        self.foreign = foreign
        self.handed_over = threading.Event()
        self.stopping = threading.Event()
        self.events: list[str] = []  # what the cluster did, in order (for the test's eyes)
        self.errors: list[str] = []
        self.installed = False
        self._thread: threading.Thread | None = None

    # ---- the API, as the admin or as someone else

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        return self.api.kubectl(*args, input=input, check=check)

    def apply(self, document: dict) -> None:
        """Creates it, or leaves it as it is when it exists (a step tried again after a failure)."""
        self.kubectl("apply", "-f", "-", input=json.dumps(document))

    def status(self, kind: str, name: str, status: dict, namespace: str | None = None) -> None:
        where = ["-n", namespace] if namespace else []
        self.kubectl("patch", kind, name, *where, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))

    def items(self, kind: str) -> dict[str, dict]:
        return {i["metadata"]["name"]: i for i in json.loads(self.kubectl("get", kind, "-A", "-o", "json").stdout)["items"]}

    def submit(self, name: str, requester: str, signer: str, usages: list[str], pem: str) -> None:
        document = {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem.encode()).decode(), "signerName": signer, "usages": usages},
        }
        # As the requester (impersonated by the admin): the API records it as spec.username.
        self.kubectl(f"--as={requester}", "--as-group=system:masters", "create", "-f", "-", input=json.dumps(document))

    # ---- the play

    def set_up(self, crds: Path) -> None:
        for path in CRDS:
            self.kubectl("create", "-f", str(crds / path))
        for crd in ("clusterversions.config.openshift.io", "clusteroperators.config.openshift.io", "etcds.operator.openshift.io", "routes.route.openshift.io"):
            self.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")
        for namespace in ("openshift-config-managed", "openshift-console"):
            self.kubectl("create", "namespace", namespace)
        self.apply({"apiVersion": "operator.openshift.io/v1", "kind": "Etcd", "metadata": {"name": "cluster"}, "spec": {"managementState": "Managed"}})
        now = datetime.now(UTC)
        for node in self.masters + self.running:
            self.register(node, now)
        if self.running:  # day 2: installed long ago
            self.bootstrap_complete()
            self.routers_run(now)
        for worker in self.workers:
            self.submit(f"csr-{worker}-client", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(f"system:node:{worker}"))
        if self.foreign:
            worker = (self.workers + self.running)[0]
            stranger = re.sub(r"^[^-]+", "other", worker)
            self.submit("csr-other-cluster", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(f"system:node:{stranger}"))
            self.submit("csr-wrong-requester", "system:serviceaccount:default:builder", CLIENT_SIGNER, CLIENT, request_pem(f"system:node:{worker}"))
        self.events.append("kubelets asked for their client certificates")

    def add_worker(self, node: str, address: str) -> None:
        """A worker made on day 2 boots: its kubelet asks for its client certificate."""
        self.nodes = {**self.nodes, node: address}
        self.submit(f"csr-{node}-client", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(f"system:node:{node}"))
        self.workers = sorted({*self.workers, node})
        self.events.append(f"{node} asked for its client certificate")

    def register(self, node: str, moment: datetime) -> None:
        self.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
        self.ready(node, moment)

    def ready(self, node: str, moment: datetime) -> None:
        condition = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": _stamp(moment), "lastTransitionTime": _stamp(moment)}
        self.status("node", node, {"conditions": [condition], "addresses": [{"type": "InternalIP", "address": self.nodes[node]}, {"type": "Hostname", "address": node}]})

    def bootstrap_complete(self) -> None:
        """What the bootstrap writes when it hands over, and the etcd operator after it."""
        self.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bootstrap", "namespace": "kube-system"}, "data": {"status": "complete"}})
        now = _stamp(datetime.now(UTC))
        self.status("etcd", "cluster", {"conditions": [{"type": "EtcdBootstrapMemberRemoved", "status": "True", "reason": "BootstrapMemberRemoved", "message": "", "lastTransitionTime": now}]})
        self.handed_over.set()
        self.events.append("bootstrap complete")

    def _step(self) -> bool:
        """One look at the API, doing what the nodes would: True once the cluster is installed."""
        csrs = self.items("csr")
        nodes = self.items("nodes")
        now = datetime.now(UTC)
        for worker in self.workers:
            client = csrs.get(f"csr-{worker}-client", {}).get("status", {})
            if client.get("certificate") and worker not in nodes:
                # Its kubelet has its client certificate: it registers, then asks to serve.
                self.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": worker, "labels": {"kubernetes.io/hostname": worker}}})
                self.submit(f"csr-{worker}-serving", f"system:node:{worker}", SERVING_SIGNER, SERVING, request_pem(f"system:node:{worker}", dns=[worker], ips=[self.nodes[worker]]))
                self.events.append(f"{worker} registered")
            serving = csrs.get(f"csr-{worker}-serving", {}).get("status", {})
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in nodes.get(worker, {}).get("status", {}).get("conditions") or ())
            if serving.get("certificate") and not ready:
                self.ready(worker, now)
                self.events.append(f"{worker} Ready")
        nodes = self.items("nodes")
        every = all(
            any(c.get("type") == "Ready" and c.get("status") == "True" for c in nodes.get(w, {}).get("status", {}).get("conditions") or ())
            for w in self.workers
        )
        if not (every and self.handed_over.is_set()) or self.installed:
            return self.installed
        self.routers_run(now)
        return True

    def routers_run(self, now: datetime) -> None:
        """With workers Ready the routers land: the console's Route is admitted, the operators settle."""
        self.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "default-ingress-cert", "namespace": "openshift-config-managed"}, "data": {"ca-bundle.crt": _ca_pem()}})
        host = f"console-openshift-console.apps.{self.domain}"
        self.apply({"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": {"name": "console", "namespace": "openshift-console"}, "spec": {"host": host, "to": {"kind": "Service", "name": "console"}, "tls": {"termination": "reencrypt"}}})
        self.status("route", "console", {"ingress": [{"host": host, "routerName": "default", "conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": _stamp(now)}]}]}, namespace="openshift-console")
        settled = _stamp(now - timedelta(minutes=5))  # past the installer's 30 s stability threshold
        for operator in OPERATORS:
            self.apply({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": operator}, "spec": {}})
            conditions = [
                {"type": kind, "status": status, "lastTransitionTime": settled, "reason": "AsExpected"}
                for kind, status in (("Available", "True"), ("Progressing", "False"), ("Degraded", "False"))
            ]
            self.status("clusteroperator", operator, {"conditions": conditions})
        self.apply({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"}, "spec": {"clusterID": "00000000-0000-4000-8000-000000000001"}})
        version = {"image": "quay.io/openshift-release-dev/ocp-release:4.19.0-ec.5-x86_64", "version": "4.19.0-ec.5"}
        self.status(
            "clusterversion", "version",
            {
                "desired": version,
                "history": [{"state": "Completed", "startedTime": settled, "completionTime": _stamp(now), "verified": False, **version}],
                "observedGeneration": 1,
                "versionHash": "played",
                "availableUpdates": [],  # required; null would delete it in a merge patch
                "capabilities": {},
                "conditions": [
                    {"type": kind, "status": status, "lastTransitionTime": _stamp(now), "message": f"Cluster version is {version['version']}" if kind == "Available" else ""}
                    for kind, status in (("Available", "True"), ("Failing", "False"), ("Progressing", "False"))
                ],
            },
        )
        self.installed = True
        self.events.append("installed")

    def run(self, interval: float = 1.0) -> None:
        """Plays until stopped: day 2 may bring more workers."""
        while not self.stopping.is_set():
            try:
                self._step()
            except kubeapi.KubeAPIError as error:
                self.errors.append(str(error))
            self.stopping.wait(interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="played-cluster", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._thread:
            self._thread.join(timeout=60)

    def pending(self) -> dict[str, str]:
        """CSR name -> requester, of every CSR with no verdict."""
        return {name: item["spec"].get("username", "") for name, item in self.items("csr").items() if not (item.get("status") or {}).get("conditions")}


@contextmanager
def played(
    directory: Path, assets: Path, nodes: dict[str, str], cluster_domain: str, running: frozenset[str] = frozenset(), address: str = "127.0.0.1"
) -> Iterator[PlayedCluster]:
    """The API server on `address`:6443 (loopback) with the installer's certificates from `assets`, the
    csrsigning controller, the CRDs, and the cluster played (its thread started)."""
    serving, admin_ca = cluster_certificates(assets, directory / "cluster-tls")
    with kubeapi.running(directory / "api", controllers=("csrsigning",), port=6443, sni=(serving, f"api.{cluster_domain}"), client_cas=(admin_ca,), address=address) as api:
        cluster = PlayedCluster(api, nodes, cluster_domain, running=running)
        cluster.set_up(openshift_api_module())
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()

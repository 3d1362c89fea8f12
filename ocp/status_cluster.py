"""The cluster as its API tells it, read only (`get` and `auth whoami`, never an approval nor a write): the
ClusterVersion and its conditions, the nodes and their readiness, the Degraded ClusterOperators, the pending
certificate requests with the approver's verdict for each (ocp/approver.py judges them as it would, and
approves none), and the nearest expiry of the certificates it can read (the API's serving chain and the
kubeconfig's own)."""

from __future__ import annotations

import base64
import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import yaml
from cryptography import x509

from cluster.printable import shown
from ocp.approver import judge
from ocp.kube import Kube, KubeError

# Sooner than this, an expiry makes the cluster unhealthy (a long shutdown then needs its recovery: docs/day2.md).
EXPIRY_WARNING_DAYS = 30


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class NodeState:
    name: str
    ready: bool
    reason: str  # the Ready condition's reason, or why there is none


@dataclass(frozen=True)
class Operator:
    name: str
    reason: str
    message: str


@dataclass(frozen=True)
class Request:
    name: str
    node: str  # whose it claims to be ("" where it could not be read)
    kind: str  # client, serving, other
    verdict: str  # would approve, by name only, never
    reason: str


@dataclass(frozen=True)
class Expiry:
    what: str
    not_after: datetime
    days: float


@dataclass(frozen=True)
class Cluster:
    read: bool
    why: str = ""  # why it could not be read
    version: str = ""
    conditions: tuple[Condition, ...] = ()
    nodes: tuple[NodeState, ...] = ()
    degraded: tuple[Operator, ...] = ()
    pending: tuple[Request, ...] = ()
    expiry: Expiry | None = None

    def problems(self) -> list[str]:
        """What makes the cluster unhealthy, one line each."""
        found = [f"node {node.name} is not Ready ({node.reason})" for node in self.nodes if not node.ready]
        found += [f"cluster operator {operator.name} is Degraded ({operator.reason})" for operator in self.degraded]
        found += [f"certificate request {request.name} is pending ({request.verdict})" for request in self.pending]
        by_type = {condition.type: condition for condition in self.conditions}
        if self.read and by_type.get("Available") and by_type["Available"].status != "True":
            found.append(f"the ClusterVersion is not Available ({by_type['Available'].reason})")
        if by_type.get("Failing") and by_type["Failing"].status == "True":
            found.append(f"the ClusterVersion is Failing ({by_type['Failing'].reason})")
        if self.expiry and self.expiry.days < EXPIRY_WARNING_DAYS:
            found.append(f"{self.expiry.what} expires in {self.expiry.days:.0f} days ({self.expiry.not_after:%Y-%m-%d %H:%M} UTC)")
        return found


def read(
    kube: Kube, kubeconfig: str, nodes: Mapping[str, str | Sequence[str]], domain: str, created: Mapping[str, str] | None, stack: str,
    untimed: str | None, bootstrap: bool = False,
) -> Cluster:
    """`nodes`, `created`: the stack's outputs the approver reads; a Cluster with read=False where the API does not answer
    (with the nearest expiry of what the kubeconfig holds)."""
    try:
        now = kube.server_time()
        versions = kube.items("clusterversions.config.openshift.io")
        operators = kube.items("clusteroperators.config.openshift.io")
        registered = kube.items("nodes")
        passed = judge(kube, nodes, domain, created, untimed=untimed, bootstrap=bootstrap)
    except KubeError as error:  # the kubeconfig's own certificates still tell (a long shutdown's expiry)
        return Cluster(False, f"the cluster's API did not answer: {shown(str(error))}", expiry=nearest_expiry(kubeconfig, datetime.now(UTC)))
    version = next((item for item in versions if (item.get("metadata") or {}).get("name") == "version"), {})
    status = version.get("status") or {}
    history = status.get("history") or []
    conditions = tuple(_condition(item) for item in status.get("conditions") or ())
    return Cluster(
        True,
        version=str((status.get("desired") or {}).get("version") or (history[0].get("version") if history else "") or ""),
        conditions=conditions,
        nodes=tuple(sorted((_node(item) for item in registered), key=lambda node: node.name)),
        degraded=tuple(sorted((op for op in map(_degraded, operators) if op), key=lambda op: op.name)),
        pending=tuple(
            Request(v.csr, v.node or "", v.kind, "would approve" if v.approve else "by name only" if v.by_name else "never", v.reason)
            for v in passed
        ),
        expiry=nearest_expiry(kubeconfig, now),
    )


def _condition(item: Mapping[str, Any]) -> Condition:
    return Condition(*(shown(str(item.get(key) or "")) for key in ("type", "status", "reason", "message")))


def _node(item: Mapping[str, Any]) -> NodeState:
    ready = next((c for c in (item.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"), None)
    name = shown(str((item.get("metadata") or {}).get("name") or ""))
    if ready is None:
        return NodeState(name, False, "no Ready condition")
    return NodeState(name, ready.get("status") == "True", shown(str(ready.get("reason") or ready.get("status") or "")))


def _degraded(item: Mapping[str, Any]) -> Operator | None:
    for condition in (item.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Degraded" and condition.get("status") == "True":
            name = (item.get("metadata") or {}).get("name") or ""
            return Operator(shown(str(name)), shown(str(condition.get("reason") or "")), shown(str(condition.get("message") or "")))
    return None


def nearest_expiry(kubeconfig: str, now: datetime, timeout: float = 10) -> Expiry | None:
    """The soonest notAfter among the kubeconfig's CA and client certificate and the chain the API serves."""
    found: list[tuple[str, x509.Certificate]] = []
    try:
        document = yaml.safe_load(kubeconfig) or {}
    except yaml.YAMLError:
        document = {}
    for entry in document.get("clusters") or ():
        data = (entry.get("cluster") or {}).get("certificate-authority-data")
        found += [(f"the kubeconfig's CA ({_subject(c)})", c) for c in _pems(data)]
    for entry in document.get("users") or ():
        data = (entry.get("user") or {}).get("client-certificate-data")
        found += [(f"the kubeconfig's client certificate ({_subject(c)})", c) for c in _pems(data)]
    servers = [(entry.get("cluster") or {}).get("server") for entry in document.get("clusters") or ()]
    for server in filter(None, servers):
        certificate = _served(server, timeout)
        if certificate is not None:
            found.append((f"the API's serving certificate ({_subject(certificate)})", certificate))
    if not found:
        return None
    what, soonest = min(found, key=lambda item: item[1].not_valid_after_utc)
    return Expiry(what, soonest.not_valid_after_utc, (soonest.not_valid_after_utc - now.astimezone(UTC)).total_seconds() / 86400)


def _pems(data: str | None) -> list[x509.Certificate]:
    if not data:
        return []
    try:
        return x509.load_pem_x509_certificates(base64.b64decode(data))
    except ValueError:
        return []


def _subject(certificate: x509.Certificate) -> str:
    return shown(certificate.subject.rfc4514_string())


def _served(server: str, timeout: float) -> x509.Certificate | None:
    """The leaf the API serves (its name as the kubeconfig gives it, for SNI); unverified: only its dates are read."""
    parts = urlsplit(server)
    if parts.scheme != "https" or not parts.hostname:
        return None
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((parts.hostname, parts.port or 443), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=parts.hostname) as tls:
                der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError):
        return None
    return x509.load_der_x509_certificate(der) if der else None

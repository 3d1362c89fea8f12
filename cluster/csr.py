"""Which pending certificate signing requests are this stack's nodes', and nothing else. Pure Python.

The Machine API's approver approves only CSRs that match a Machine it knows; this program makes
its nodes outside the Machine API, so it judges against what it made: the stack's `nodes`
output (name -> address). Approved, as the machine approver does for Machines:

- a client CSR (signer kubernetes.io/kube-apiserver-client-kubelet) asked for by the node
  bootstrapper service account, for `CN=system:node:<name>, O=system:nodes` where `<name>` is
  one of ours with no Node object yet, with the kubelet's usages and no alternative names;
- a serving CSR (signer kubernetes.io/kubelet-serving) asked for by `system:node:<name>` itself,
  for that same subject, with the kubelet's usages, DNS names within the node's hostname and IP
  addresses within its addresses in the stack.

At most one of each kind per node in a pass; everything else stays pending, with its reason.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.x509.oid import NameOID

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
NODE_BOOTSTRAPPER = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
NODE_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
# What the kubelet asks for: key encipherment only with an RSA key (the kubelet's are ECDSA).
CLIENT_USAGES = ({"digital signature", "client auth"}, {"digital signature", "key encipherment", "client auth"})
SERVING_USAGES = ({"digital signature", "server auth"}, {"digital signature", "key encipherment", "server auth"})


@dataclass(frozen=True)
class Request:
    """One CertificateSigningRequest as the API returns it."""

    name: str
    signer: str
    username: str
    usages: tuple[str, ...]
    request: bytes  # the PEM CSR (spec.request, base64-decoded)
    decided: bool = False  # approved or denied already

    @classmethod
    def from_object(cls, item: Mapping) -> Request:
        spec, status = item.get("spec") or {}, item.get("status") or {}
        conditions = {c.get("type") for c in status.get("conditions") or ()}
        return cls(
            name=item["metadata"]["name"],
            signer=spec.get("signerName", ""),
            username=spec.get("username", ""),
            usages=tuple(spec.get("usages") or ()),
            request=base64.b64decode(spec.get("request", "")),
            decided=bool(conditions & {"Approved", "Denied"}),
        )


@dataclass(frozen=True)
class Verdict:
    csr: str
    node: str | None  # whose it claims to be, where that could be read
    kind: str  # client, serving, other
    approve: bool
    reason: str


@dataclass
class _Pass:
    approved: set[tuple[str, str]] = field(default_factory=set)


def review(
    requests: Iterable[Request], nodes: Mapping[str, str], registered: Iterable[str], domain: str = ""
) -> list[Verdict]:
    """A verdict for every undecided request. `nodes`: the stack's nodes (name -> IP address);
    `registered`: the Node objects there are; `domain`: the cluster's domain (a node's FQDN)."""
    verdicts = []
    this_pass = _Pass()
    known = set(registered)
    for request in sorted(requests, key=lambda r: r.name):
        if request.decided:
            continue
        verdicts.append(_verdict(request, nodes, known, domain, this_pass))
    return verdicts


def _verdict(request: Request, nodes: Mapping[str, str], registered: set[str], domain: str, this_pass: _Pass) -> Verdict:
    kind = {CLIENT_SIGNER: "client", SERVING_SIGNER: "serving"}.get(request.signer, "other")

    def refuse(reason: str, node: str | None = None) -> Verdict:
        return Verdict(request.name, node, kind, False, reason)

    if kind == "other":
        return refuse(f"signer {request.signer or '(none)'} is not a kubelet's")
    try:
        parsed = x509.load_pem_x509_csr(request.request)
    except ValueError:
        return refuse("the request is not a PEM certificate signing request")
    if not parsed.is_signature_valid:
        return refuse("the request's signature does not match its key")
    subject = parsed.subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    organizations = subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    common = str(names[0].value) if len(names) == 1 else ""
    if not common.startswith(NODE_PREFIX):
        return refuse(f"subject {subject.rfc4514_string()} is not a node's (CN=system:node:<name>)")
    node = common.removeprefix(NODE_PREFIX)
    if [str(o.value) for o in organizations] != [NODES_GROUP] or len(subject) != 2:
        return refuse(f"subject {subject.rfc4514_string()} is not exactly CN=system:node:{node}, O=system:nodes", node)
    if node not in nodes:
        return refuse(f"{node} is not a node of this stack", node)
    dns, ips, other = _alternative_names(parsed)
    usages = set(request.usages)
    if kind == "client":
        if request.username != NODE_BOOTSTRAPPER:
            return refuse(f"requested by {request.username or '(nobody)'}, not the node bootstrapper", node)
        if node in registered:
            return refuse(f"Node {node} exists: its kubelet renews with its own identity", node)
        if usages not in CLIENT_USAGES:
            return refuse(f"usages {sorted(usages)} are not a kubelet client's", node)
        if dns or ips or other:
            return refuse("a client certificate carries no alternative names", node)
    else:
        if request.username != NODE_PREFIX + node:
            return refuse(f"requested by {request.username or '(nobody)'}, not by {NODE_PREFIX}{node} itself", node)
        if usages not in SERVING_USAGES:
            return refuse(f"usages {sorted(usages)} are not a kubelet server's", node)
        allowed = {node, *([f"{node}.{domain}"] if domain else [])}
        if set(dns) - allowed:
            return refuse(f"DNS names {sorted(set(dns) - allowed)} are not {node}'s", node)
        foreign = sorted(str(ip) for ip in ips if str(ip) != nodes[node])
        if foreign:
            return refuse(f"IP addresses {foreign} are not {node}'s ({nodes[node]})", node)
        if other:
            return refuse(f"alternative names {other} are neither DNS names nor IP addresses", node)
    # Last, so that a request refused anyway is told its own reason, not this one.
    if (node, kind) in this_pass.approved:
        return refuse(f"another {kind} request of {node} was approved in this pass", node)
    this_pass.approved.add((node, kind))
    return Verdict(request.name, node, kind, True, f"{kind} certificate of {node}, a node of this stack")


def _alternative_names(parsed: x509.CertificateSigningRequest) -> tuple[list[str], list[ipaddress._BaseAddress], list[str]]:
    try:
        names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], [], []
    dns = names.get_values_for_type(x509.DNSName)
    ips = names.get_values_for_type(x509.IPAddress)
    other = [str(name.value) for name in names if not isinstance(name, (x509.DNSName, x509.IPAddress))]
    return dns, ips, other

"""Which pending certificate signing requests are this stack's nodes', and nothing else. Pure Python.

The Machine API's approver approves only CSRs that match a Machine it knows; this program makes its
nodes outside the Machine API, so it judges against what it made: the stack's `nodes` output (name ->
its addresses, every family's; one address, as a string, in stacks last `up` by 0.1.0) and, where the platform
has them, its servers' creation times (`nodeCreated`: OpenStack's; libvirt's domains keep none).
Each is checked as the machine approver checks it for Machines:

- a client CSR (signer kubernetes.io/kube-apiserver-client-kubelet) asked for by the node
  bootstrapper service account, for `CN=system:node:<name>, O=system:nodes` where `<name>` is one
  of ours, not the bootstrap (it never joins), with the kubelet's usages and no alternative names;
  with no Node object now (one whose kubelet went quiet after a long shutdown: by name only, see
  cluster/csr_expired.py) and none approved before for this server (one approved already, with no
  Node now, means its Node was deleted: only a new server joins again); where the server's creation
  time is known, the request is no older than the server (10 s for clocks, the machine approver's
  skew) and the approval comes within CLIENT_WINDOW of the server's creation (below);
- a serving CSR (signer kubernetes.io/kubelet-serving) asked for by `system:node:<name>` itself,
  for that same subject, with the kubelet's usages, DNS names within the node's hostname and IP
  addresses among its addresses in the stack.

Whoever holds the node-bootstrapper token (served to the machine network) can ask for a new
node's client certificate before its kubelet does: a client CSR that passes is approved by itself
only if it is a worker's (or, while the bootstrap runs, `bootstrapping`, a master's: the job the
installer's blanket approve-csr.service did, masked here), its server's creation time is known (or
`untimed` is None: libvirt in `ocp install`'s wait), it has waited SETTLE and no other client
request for that node came from the bootstrapper since its server was made (in any state). Any
held back so is approved only when named (`named`), after every check but the wait and the
duplicates. Two serving requests that would pass for one node approve neither.

The request is read as Kubernetes reads it (cluster/csr_request.py), so what is judged is what the
signer signs; a request that cannot be read, and one whose name no kubelet gives, is never approved
nor offered by name. Everything else stays pending, with its reason; a request that fails the judge
itself stays pending with why, and the others are judged still.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.x509.oid import NameOID

from cluster.csr_expired import named_only, quiet_problem
from cluster.csr_request import Request, fingerprint, parse_time, quoted, read_request, shown

__all__ = ["Request", "Verdict", "parse_time", "read_request", "review", "role", "shown"]

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
NODE_BOOTSTRAPPER = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
NODE_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
# What the kubelet asks for: key encipherment only with an RSA key (the kubelet's are ECDSA).
CLIENT_USAGES = ({"digital signature", "client auth"}, {"digital signature", "key encipherment", "client auth"})
SERVING_USAGES = ({"digital signature", "server auth"}, {"digital signature", "key encipherment", "server auth"})
# The machine approver's maxMachineClockSkew: a client CSR may seem this much older than its server.
CLOCK_SKEW = timedelta(seconds=10)
# The machine approver takes client CSRs up to 2 h after the Machine (maxMachineDelta), and so does
# this one: an install's workers ask only once the bootstrap has handed over, and the install
# driver waits up to 60 + 40 min by default. Unlike the machine approver, which remembers a
# Machine's Node for ever, this one's only record that a server's node joined is the approved
# client CSR, which Kubernetes' CSR cleaner removes 1 h after its approval: a Node deleted in the
# window's second hour is not noticed (the requester must also hold the bootstrapper token).
CLIENT_WINDOW = timedelta(hours=2)
# How long a worker's client request must stay its node's only one before it is approved. A
# forger asks as soon as a new server answers; the kubelet only after RHCOS's first boot (Ignition,
# then machine-config-daemon-firstboot rebases onto the release's OS image and reboots before
# kubelet-dependencies.target: openshift/machine-config-operator, units/
# machine-config-daemon-firstboot.service.yaml), which OpenShift expects to give a Node within
# 10 min (openshift/machine-api-operator, MachineHealthCheck defaultNodeStartupTimeout). It must
# end before 15 min: a kubelet whose request is not signed by then asks again with a new key
# (k8s.io/client-go util/certificate/certificate_manager.go, certificateWaitTimeout), a second
# request that stops its node's automatic approval.
SETTLE = timedelta(minutes=10)
# Why client requests wait for a name where the stack gives no creation times (the default).
UNTIMED = "the stack gives no creation times for its servers"

@dataclass(frozen=True)
class Verdict:
    csr: str
    node: str | None  # whose it claims to be, where that could be read
    kind: str  # client, serving, other
    approve: bool
    reason: str
    subject: str = ""  # what was judged, where the request could be read: its attributes (RFC 4514), sorted
    names: tuple[str, ...] = ()  # its alternative names, `DNS:...`, `IP:...`, sorted
    by_name: bool = False  # passes every check but those of automatic approval: the user may name it
    key: str = ""  # its public key's SHA-256, where the request could be read (cluster/csr_request.py, fingerprint)


def addresses(value: str | Sequence[str]) -> tuple[str, ...]:
    """A node's addresses from the stack's `nodes` output: a list (every family's), or one address as a
    string (stacks last `up` by 0.1.0); each as Python writes it (`2001:db8::5`, not `2001:DB8:0::5`)."""
    return tuple(str(ipaddress.ip_address(text)) for text in ([value] if isinstance(value, str) else value) if text is not None)


def review(
    requests: Iterable[Request],
    nodes: Mapping[str, str | Sequence[str]],
    registered: Iterable[str],
    domain: str = "",
    created: Mapping[str, str] | None = None,
    now: datetime | None = None,
    *,
    settle: timedelta = SETTLE,
    untimed: str | None = UNTIMED,
    named: Collection[str] | None = None,
    bootstrapping: bool = False,
) -> list[Verdict]:
    """A verdict for every undecided request. `nodes`: the stack's nodes (name -> its addresses);
    `registered`: the Node objects there are; `domain`: the cluster's domain (a node's FQDN);
    `created`: when each node's server was made (name -> time, as the stack's `nodeCreated`
    says; None where the stack has no such times); `now`: the time of this pass, the API server's;
    `settle`: how long a client request waits alone; `untimed`: why client requests wait for a name
    when `created` is None (None: they do not); `named`: the requests the user named, the only
    ones judged then, without the settling and duplicate rules; `bootstrapping`: the bootstrap has
    not handed over yet (the masters' client requests pass as the workers' do)."""
    requests = sorted(requests, key=lambda r: r.name)
    known = registered if isinstance(registered, Mapping) else dict.fromkeys(registered, {})  # name -> Node
    joined = _by_node(requests, lambda r: r.approved)  # the CSR cleaner keeps approved ones 1 h
    judged = [r for r in requests if not r.decided and (named is None or r.name in named)]
    verdicts = [_guarded(request, _verdict, request, nodes, known, domain, created, now, joined, named is not None) for request in judged]
    if named is None:
        claims = _by_node(requests, lambda r: r.username == NODE_BOOTSTRAPPER)  # any state
        verdicts = [
            _guarded(request, _automatic, verdict, request, created, now, settle, untimed, claims, bootstrapping) if verdict.approve and verdict.kind == "client" else verdict
            for verdict, request in zip(verdicts, judged)
        ]
        # Two serving requests that would pass for one node: which is the kubelet's is not ours to guess.
        serving: dict[str | None, list[str]] = {}
        for verdict in verdicts:
            if verdict.approve and verdict.kind == "serving":
                serving.setdefault(verdict.node, []).append(verdict.csr)
        verdicts = [
            _refused(verdict, f"{len(serving[verdict.node])} pending serving requests claim {verdict.node} "
                     f"({', '.join(map(quoted, serving[verdict.node]))}): none approved; delete those its kubelet did not make (`oc delete csr -- NAME`)")
            if verdict.approve and verdict.kind == "serving" and len(serving[verdict.node]) > 1
            else verdict
            for verdict in verdicts
        ]
    # Last, so that the reason a request is not its node's shows first: a name no kubelet gives is a forger's.
    return [_guarded(request, _named_as_a_kubelet, verdict, request) if verdict.approve or verdict.by_name else verdict for verdict, request in zip(verdicts, judged)]


def role(node: str) -> str:
    """master, worker or bootstrap, from a node's name (`<prefix>-<role>-<index>`, `<prefix>-bootstrap`); '' if none."""
    found = re.search(r"-(master|worker)-\d+$", node)
    return found[1] if found else "bootstrap" if node.endswith("-bootstrap") else ""


def _guarded(request: Request, step: Callable[..., Verdict], *args) -> Verdict:
    """A step of the request's verdict; one the judge fails on stays pending with why (the others are judged still)."""
    try:
        return step(*args)
    except Exception as error:  # noqa: BLE001 - no request ends a pass
        return Verdict(request.name, None, "other", False, f"the request could not be judged ({type(error).__name__}: {shown(str(error))})")


def _named_as_a_kubelet(verdict: Verdict, request: Request) -> Verdict:
    problem = request.name_problem()
    return _refused(verdict, f"{problem}: not approved, even by name") if problem else verdict


def _automatic(
    verdict: Verdict,
    request: Request,
    created: Mapping[str, str] | None,
    now: datetime | None,
    settle: timedelta,
    untimed: str | None,
    claims: Mapping[str, list[Request]],
    bootstrapping: bool,
) -> Verdict:
    """A client request that passed every check, held back unless automatic approval is safe (module docstring)."""
    node = verdict.node or ""
    if role(node) != "worker" and not (role(node) == "master" and bootstrapping):
        what = "a master" if role(node) == "master" else "no worker"
        after = ", once the bootstrap has handed over" if role(node) == "master" else ""
        return _refused(verdict, f"{node} is {what}: its client certificate is never approved automatically{after}", by_name=True)
    made = parse_time(created[node]) if created is not None else None  # _verdict read it already
    if created is None and untimed is not None:
        return _refused(verdict, f"{untimed}: a client certificate is approved automatically only where its server's creation time is known", by_name=True)
    others = [r.name for r in claims.get(node, ()) if r.name != request.name and (made is None or r.created is None or r.created >= made - CLOCK_SKEW)]
    if others:
        since = "since its server was made" if made is not None else "in the API"
        return _refused(
            verdict,
            f"{len(others) + 1} client requests for {node} {since} ({', '.join(map(quoted, sorted([request.name, *others])))}): none is approved "
            f"automatically, as one may be a forger's",
            by_name=True,
        )
    if now is None or request.created is None or now < request.created + settle:
        until = f" until {request.created + settle:%Y-%m-%d %H:%M:%S}Z" if request.created is not None else ""
        return _refused(verdict, f"settling{until}: a {role(node)}'s client request is approved once it has stayed {node}'s only one for {_span(settle)}")
    return verdict


def _span(period: timedelta) -> str:
    seconds = int(period.total_seconds())
    return f"{seconds // 60} min" if seconds % 60 == 0 and seconds else f"{seconds} s"


def _refused(verdict: Verdict, reason: str, by_name: bool = False) -> Verdict:
    return replace(verdict, approve=False, reason=reason, by_name=by_name)


def _client_node(request: Request) -> str | None:
    """The node a client request names (`CN=system:node:<name>`), where it can be read."""
    if request.signer != CLIENT_SIGNER:
        return None
    try:
        common = read_request(request.request).subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    except ValueError:
        return None
    if len(common) == 1 and str(common[0].value).startswith(NODE_PREFIX):
        return str(common[0].value).removeprefix(NODE_PREFIX)
    return None


def _by_node(requests: Iterable[Request], keep: Callable[[Request], bool]) -> dict[str, list[Request]]:
    """node -> the client requests for it that `keep` keeps."""
    found: dict[str, list[Request]] = {}
    for request in requests:
        node = _client_node(request) if keep(request) else None
        if node is not None:
            found.setdefault(node, []).append(request)
    return found


def _verdict(
    request: Request,
    nodes: Mapping[str, str | Sequence[str]],
    registered: Mapping[str, Mapping],
    domain: str,
    created: Mapping[str, str] | None,
    now: datetime | None,
    joined: Mapping[str, list[Request]],
    named: bool = False,
) -> Verdict:
    kind = {CLIENT_SIGNER: "client", SERVING_SIGNER: "serving"}.get(request.signer, "other")
    seen: dict = {}  # what was judged (subject, names, key), once the request is read

    def refuse(reason: str, node: str | None = None) -> Verdict:
        return Verdict(request.name, node, kind, False, reason, **seen)

    if kind == "other":
        return refuse(f"signer {shown(request.signer) or '(none)'} is not a kubelet's")
    try:
        parsed = read_request(request.request)
    except ValueError as error:
        return refuse(str(error))
    seen["key"] = fingerprint(parsed)
    if not parsed.is_signature_valid:
        return refuse("the request's signature does not match its key")
    subject = parsed.subject
    dns, ips, other = _alternative_names(parsed)
    seen["subject"] = ", ".join(sorted(attribute.rfc4514_string() for attribute in subject))
    seen["names"] = tuple(sorted([*(f"DNS:{d}" for d in dns), *(f"IP:{ip}" for ip in ips), *other]))
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    organizations = subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    common = str(names[0].value) if len(names) == 1 else ""
    if not common.startswith(NODE_PREFIX):
        return refuse(f"subject {shown(subject.rfc4514_string())} is not a node's (CN=system:node:<name>)")
    node = common.removeprefix(NODE_PREFIX)
    if [str(o.value) for o in organizations] != [NODES_GROUP] or len(subject) != 2:
        return refuse(f"subject {shown(subject.rfc4514_string())} is not exactly CN=system:node:{shown(node)}, O=system:nodes", node)
    if node not in nodes:
        return refuse(f"{shown(node)} is not a node of this stack", node)
    if node.endswith("-bootstrap"):  # the bootstrap's name; masters' and workers' end in their index
        return refuse(f"{node} is the bootstrap, which never joins the cluster as a Node", node)
    usages = set(request.usages)
    if kind == "client":
        if request.username != NODE_BOOTSTRAPPER:
            return refuse(f"requested by {shown(request.username) or '(nobody)'}, not the node bootstrapper", node)
        if usages not in CLIENT_USAGES:
            return refuse(f"usages {shown(str(sorted(usages)))} are not a kubelet client's", node)
        if dns or ips or other:
            return refuse("a client certificate carries no alternative names", node)
        if node in registered:  # a kubelet back after its certificate expired, or a forger: named only (cluster/csr_expired.py)
            quiet, beat = quiet_problem(node, registered[node], addresses(nodes[node]), request.created, now)
            reason = quiet or (f"client certificate of {node}, a node of this stack whose kubelet stopped reporting at {beat:%Y-%m-%d %H:%M:%S}Z" if named else named_only(node, beat))
            return Verdict(request.name, node, kind, named and not quiet, reason, by_name=not quiet and not named, **seen)
        late = _client_time(request, node, created, now, joined.get(node, ()))
        if late:
            return refuse(late, node)
    else:
        if request.username != NODE_PREFIX + node:
            return refuse(f"requested by {shown(request.username) or '(nobody)'}, not by {NODE_PREFIX}{node} itself", node)
        if usages not in SERVING_USAGES:
            return refuse(f"usages {shown(str(sorted(usages)))} are not a kubelet server's", node)
        allowed = {node, *([f"{node}.{domain}"] if domain else [])}
        if set(dns) - allowed:
            return refuse(f"DNS names {shown(str(sorted(set(dns) - allowed)))} are not {node}'s", node)
        own = addresses(nodes[node])  # a dual-stack kubelet asks for both families' (--node-ip)
        foreign = sorted(str(ip) for ip in ips if str(ip) not in own)
        if foreign:
            return refuse(f"IP addresses {foreign} are not {node}'s ({', '.join(own)})", node)
        if other:
            return refuse(f"alternative names {shown(str(other))} are neither DNS names nor IP addresses", node)
    return Verdict(request.name, node, kind, True, f"{kind} certificate of {node}, a node of this stack", **seen)


def _client_time(request: Request, node: str, created: Mapping[str, str] | None, now: datetime | None, approved: Iterable[Request]) -> str:
    """Why a client request of `node` comes at the wrong time for its server, or ''."""
    replace = f"replace {node}'s server (`pulumi up --replace` its URN) to have it join again"
    made = None
    if created is not None:
        if not created.get(node):
            return f"the stack gives no creation time for {node}'s server: {replace}"
        try:
            made = parse_time(created[node])
        except ValueError:
            return f"{node}'s server's creation time {shown(created[node])!r} cannot be read"
    earlier = [r for r in approved if made is None or (r.created is not None and r.created >= made - CLOCK_SKEW)]
    if earlier:
        return (f"a client certificate of {node} was approved already ({quoted(earlier[0].name)}) and there is no Node {node}: "
                f"its Node was deleted, and only a new server joins again: {replace}")
    if made is None:
        return ""
    if now is None:
        return "the time of this pass is unknown: whether the request comes within its server's window cannot be judged"
    if request.created is not None and request.created < made - CLOCK_SKEW:
        return f"made at {request.created:%Y-%m-%d %H:%M:%S}Z, before {node}'s server ({made:%Y-%m-%d %H:%M:%S}Z)"
    if now > made + CLIENT_WINDOW:
        minutes = int(CLIENT_WINDOW.total_seconds() // 60)
        return (f"{node}'s server was created at {made:%Y-%m-%d %H:%M:%S}Z, more than {minutes} min ago: a client certificate "
                f"is approved only within {minutes} min of the server's creation, as the machine approver does: {replace}")
    return ""


def _alternative_names(parsed: x509.CertificateSigningRequest) -> tuple[list[str], list[ipaddress._BaseAddress], list[str]]:
    try:
        names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], [], []
    dns = names.get_values_for_type(x509.DNSName)
    ips = names.get_values_for_type(x509.IPAddress)
    other = [f"{type(name).__name__}:{name.value}" for name in names if not isinstance(name, (x509.DNSName, x509.IPAddress))]
    return dns, ips, other

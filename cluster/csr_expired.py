"""A node whose kubelet comes back after its client certificate expired (a cluster shut down for longer
than the certificate's life). Pure Python.

The kubelet then falls back to its bootstrap kubeconfig and asks, as the node bootstrapper, for a client
certificate of a Node that exists. Kubernetes cannot tell that request from a forger's (anyone holding
the bootstrapper's token), so cluster/csr.py approves it only when the user names it (`approve-csrs --csr
NAME`, the name read in the node's kubelet journal), and only if the API agrees that the node went quiet:
its Node carries the stack's address for it, the node lifecycle controller has marked it Ready=Unknown
(its kubelet stopped renewing its lease: a kubelet that reports, Ready or not, still holds a working
certificate), its last heartbeat came before the request, and the request is recent enough for its
kubelet to still be waiting for it. Subject, usages and requester are checked by cluster/csr.py first.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

# The node lifecycle controller marks a node Unknown once its lease is this much late
# (kube-controller-manager --node-monitor-grace-period, 40 s in OpenShift): a request made
# earlier than that after the last heartbeat came while the kubelet still reported.
GRACE = timedelta(seconds=40)
# A kubelet whose request is not signed within 15 min asks again with a new key (client-go
# util/certificate/certificate_manager.go, certificateWaitTimeout): an older request is no
# longer awaited by its kubelet, only perhaps by a forger.
WINDOW = timedelta(minutes=15)


def quiet_problem(node: str, seen: Mapping[str, Any], addresses: Sequence[str], created: datetime | None, now: datetime | None) -> tuple[str, datetime | None]:
    """Why a bootstrapper's client request for an existing Node is not that of a kubelet back from a
    long shutdown ('' if it may be), and the node's last heartbeat where known. `addresses`: the
    stack's for the node (any of them in the Node's internal addresses will do)."""
    status = seen.get("status") or {}
    internal = sorted(a.get("address", "") for a in status.get("addresses") or () if a.get("type") == "InternalIP")
    if not set(_canonical(internal)) & set(_canonical(addresses)):
        listed = ", ".join(internal) or "none"
        ours = ", ".join(addresses)
        return f"Node {node} exists, but its internal addresses ({listed}) do not include {ours}, this stack's address for it: it is not this stack's node", None
    ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    if ready is None:
        return f"Node {node} exists, with no Ready condition: nothing says its kubelet stopped reporting", None
    try:  # RFC 3339, as the API writes it
        beat = datetime.fromisoformat(ready.get("lastHeartbeatTime") or "")
    except ValueError:
        beat = None
    if beat is None or beat.tzinfo is None:
        return f"Node {node} exists, its Ready condition with no heartbeat time: nothing says when its kubelet stopped reporting", None
    if ready.get("status") != "Unknown":
        said = "Ready" if ready.get("status") == "True" else f"NotReady ({ready.get('reason') or ready.get('status')})"
        return (
            f"Node {node} exists and is {said} as its kubelet reported at {beat:%Y-%m-%d %H:%M:%S}Z: that kubelet holds a working client "
            "certificate and renews it with its own identity, so this request is not its kubelet's (deny it: `oc adm certificate deny -- NAME`)"
        ), beat
    if created is None:
        return "the request has no creation time: when it came cannot be judged", beat
    if created < beat + GRACE:
        return (
            f"made at {created:%Y-%m-%d %H:%M:%S}Z, while {node}'s kubelet still reported (last at {beat:%Y-%m-%d %H:%M:%S}Z): "
            "not a kubelet that lost its certificate"
        ), beat
    if now is not None and now > created + WINDOW:
        return (
            f"made at {created:%Y-%m-%d %H:%M:%S}Z, more than {int(WINDOW.total_seconds() // 60)} min ago: its kubelet has asked again "
            "since, with a new key; approve the latest request its journal names"
        ), beat
    return "", beat


def named_only(node: str, beat: datetime | None) -> str:
    """Why a request that passes these checks still waits for the user's name."""
    when = f" at {beat:%Y-%m-%d %H:%M:%S}Z" if beat is not None else ""
    return (
        f"Node {node} exists and its kubelet stopped reporting{when} (Ready Unknown): a kubelet whose client certificate "
        "expired (a long shutdown) asks again so, and so may a forger: approved only when named, once the node's journal names it"
    )


def _canonical(texts: Iterable[str]) -> list[str]:
    """Addresses as Python writes them; what is no address stays as written."""
    found = []
    for text in texts:
        try:
            found.append(str(ipaddress.ip_address(text)))
        except ValueError:
            found.append(text)
    return found

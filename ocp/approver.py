"""Approves this stack's nodes' CSRs (cluster/csr.py judges), pass after pass, until its workers are
Ready; or exactly the CSRs a user names."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cluster.csr import SETTLE, UNTIMED, Request, Verdict, review, shown
from ocp.kube import Kube, KubeError, ready

# Where a node's kubelet names the client request it made (client-go's certificate manager logs it at
# --v=2, OpenShift's level, under the signer's name).
JOURNAL = "journalctl -u kubelet | grep 'Certificate signing request created' | grep client-kubelet"


@dataclass(frozen=True)
class Pass:
    verdicts: tuple[Verdict, ...]
    ready: frozenset[str]  # this stack's nodes that are Ready


def one_pass(
    kube: Kube,
    nodes: Mapping[str, str],
    domain: str,
    created: Mapping[str, str] | None = None,
    *,
    settle: timedelta = SETTLE,
    untimed: str | None = UNTIMED,
    named: Collection[str] | None = None,
) -> Pass:
    """`created`: the stack's `nodeCreated` (when each server was made), None where the stack has
    none; `settle`, `untimed`, `named`: as cluster.csr.review takes them."""
    requests = [Request.from_object(item) for item in kube.items("certificatesigningrequests")]
    registered = {node["metadata"]["name"]: node for node in kube.items("nodes")}
    verdicts = review(requests, nodes, registered, domain, created, datetime.now(UTC), settle=settle, untimed=untimed, named=named)
    approved = [verdict.csr for verdict in verdicts if verdict.approve]
    if approved:
        kube.approve(approved)
    return Pass(tuple(verdicts), frozenset(name for name, node in registered.items() if name in nodes and ready(node)))


def tell(verdict: Verdict, say: Callable[[str], None], stack: str) -> None:
    # Reasons escape what requesters wrote; the whole line again, so none ever reaches a terminal.
    if verdict.approve:
        say(shown(f"csr: approved {verdict.csr}: {verdict.reason}"))
        return
    say(shown(f"csr: left pending {verdict.csr} ({verdict.kind}): {verdict.reason}"))
    if verdict.by_name:
        say(shown(
            f"csr:   approve it only if {verdict.node}'s kubelet made it (on {verdict.node}, by its console or ssh: `{JOURNAL}`): "
            f"python -m ocp approve-csrs --stack {stack} --csr {verdict.csr}"
        ))


def approve_until_ready(
    kube: Kube,
    nodes: Mapping[str, str],
    wanted: set[str],
    domain: str,
    deadline: float,
    say: Callable[[str], None],
    interval: float = 10,
    clock: Callable[[], float] = time.monotonic,
    created: Mapping[str, str] | None = None,
    *,
    stack: str = "STACK",
    settle: timedelta = SETTLE,
    untimed: str | None = UNTIMED,
) -> bool:
    """Passes until every node in `wanted` is Ready (True) or the deadline (False). Each verdict
    is told once: approvals, and what stays pending with its reason."""
    told: set[tuple[str, bool, str]] = set()
    while True:
        try:
            result = one_pass(kube, nodes, domain, created, settle=settle, untimed=untimed)
        except KubeError as error:  # the API comes and goes while masters restart
            say(f"csr: asking the API failed ({error}); trying again")
        else:
            for verdict in result.verdicts:
                if (verdict.csr, verdict.approve, verdict.reason) not in told:
                    told.add((verdict.csr, verdict.approve, verdict.reason))
                    tell(verdict, say, stack)
            missing = sorted(wanted - result.ready)
            if not missing:
                return True
            if clock() >= deadline:
                say(f"csr: not Ready by the deadline: {', '.join(missing)}")
                return False
        if clock() >= deadline:
            return False
        time.sleep(interval)


def approve_named(
    kube: Kube, nodes: Mapping[str, str], domain: str, names: Collection[str], say: Callable[[str], None], created: Mapping[str, str] | None, stack: str
) -> list[Verdict]:
    """Exactly the named CSRs, each after every check but the settling and the duplicates; the
    verdicts of those approved, every other one told with why not."""
    found = one_pass(kube, nodes, domain, created, named=set(names)).verdicts
    for verdict in found:
        tell(verdict, say, stack)
    for name in sorted(set(names) - {verdict.csr for verdict in found}):
        say(shown(f"csr: no pending request {name} (`oc get csr {name}`: it may be decided already, or deleted)"))
    return [verdict for verdict in found if verdict.approve]


def untimed(platform: str, stack: str) -> str:
    """Why a stack without nodeCreated gets no client approval by itself, and what to do."""
    if platform == "libvirt":
        return "libvirt keeps no creation time for its domains (client certificates are approved automatically only during `python -m ocp install`)"
    return f"the stack's outputs have no nodeCreated (its last `pulumi up` ran release 0.1.0): run `pulumi up --stack {stack}` once, then this again"

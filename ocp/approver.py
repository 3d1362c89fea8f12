"""Approves this stack's nodes' CSRs (cluster/csr.py judges), pass after pass, until its workers are Ready."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from cluster.csr import Request, Verdict, review, shown
from ocp.kube import Kube, KubeError, ready


@dataclass(frozen=True)
class Pass:
    verdicts: tuple[Verdict, ...]
    ready: frozenset[str]  # this stack's nodes that are Ready


def one_pass(kube: Kube, nodes: Mapping[str, str], domain: str, created: Mapping[str, str] | None = None) -> Pass:
    """`created`: the stack's `nodeCreated` (when each server was made), None where the platform
    keeps no such time (libvirt)."""
    requests = [Request.from_object(item) for item in kube.items("certificatesigningrequests")]
    registered = {node["metadata"]["name"]: node for node in kube.items("nodes")}
    verdicts = review(requests, nodes, registered, domain, created, datetime.now(UTC))
    approved = [verdict.csr for verdict in verdicts if verdict.approve]
    if approved:
        kube.approve(approved)
    return Pass(tuple(verdicts), frozenset(name for name, node in registered.items() if name in nodes and ready(node)))


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
) -> bool:
    """Passes until every node in `wanted` is Ready (True) or the deadline (False). Each verdict
    is told once: approvals, and what stays pending with its reason."""
    told: set[tuple[str, bool, str]] = set()
    while True:
        try:
            result = one_pass(kube, nodes, domain, created)
        except KubeError as error:  # the API comes and goes while masters restart
            say(f"csr: asking the API failed ({error}); trying again")
        else:
            for verdict in result.verdicts:
                if (verdict.csr, verdict.approve, verdict.reason) not in told:
                    told.add((verdict.csr, verdict.approve, verdict.reason))
                    # Reasons escape what requesters wrote; the whole line again, so none ever reaches a terminal.
                    if verdict.approve:
                        say(shown(f"csr: approved {verdict.csr}: {verdict.reason}"))
                    else:
                        say(shown(f"csr: left pending {verdict.csr} ({verdict.kind}): {verdict.reason}"))
            missing = sorted(wanted - result.ready)
            if not missing:
                return True
            if clock() >= deadline:
                say(f"csr: not Ready by the deadline: {', '.join(missing)}")
                return False
        if clock() >= deadline:
            return False
        time.sleep(interval)

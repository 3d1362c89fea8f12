"""Approves this stack's nodes' CSRs (cluster/csr.py judges), pass after pass, until its nodes are
Ready; or exactly the CSRs a user names. A pass judges at the API server's time, not this machine's.
No request stops a pass, and no failed pass stops the passes: each is told, and the next pass comes.

What it prints of a request is data: names shell-quoted, text with its control characters escaped,
and the request's key fingerprint, which the node's own files give (below) for the user to match."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta

from cluster.csr import SETTLE, UNTIMED, Request, Verdict, review, shown
from cluster.csr_request import DIGESTED_NAME, quoted
from ocp.kube import Kube, KubeError, ready

# Where a node's kubelet names the client request it made (client-go's certificate manager logs it at
# --v=2, OpenShift's level, under the signer's name).
JOURNAL = "journalctl -u kubelet | grep 'Certificate signing request created' | grep client-kubelet"
# The key of a pending request is in no file of an OpenShift node: its kubelet's certificate manager
# (rotateCertificates: true) keeps it in memory until the certificate comes, then writes both to
# kubelet-client-<time>.pem, linked as kubelet-client-current.pem (client-go util/certificate:
# certificate_manager.go rotateCerts, certificate_store.go Update). Once approved, that file's key is
# the request's, or the certificate went to another requester. A kubelet without rotation (its
# request named node-csr-...) keeps the pending key in kubelet-client.key.tmp (kubernetes
# pkg/kubelet/certificate/bootstrap/bootstrap.go) and asks under that key's digest.
PKI = "/var/lib/kubelet/pki"
ISSUED_KEY = f"openssl x509 -in {PKI}/kubelet-client-current.pem -noout -pubkey | openssl pkey -pubin -outform DER | openssl sha256"
PENDING_KEY = f"openssl pkey -in {PKI}/kubelet-client.key.tmp -pubout -outform DER | openssl sha256"


@dataclass(frozen=True)
class Pass:
    verdicts: tuple[Verdict, ...]
    ready: frozenset[str]  # this stack's nodes that are Ready


def one_pass(
    kube: Kube,
    nodes: Mapping[str, str | Sequence[str]],
    domain: str,
    created: Mapping[str, str] | None = None,
    *,
    settle: timedelta = SETTLE,
    untimed: str | None = UNTIMED,
    named: Collection[str] | None = None,
    bootstrap: bool = False,
) -> Pass:
    """`created`: the stack's `nodeCreated` (when each server was made), None where the stack has
    none; `settle`, `untimed`, `named`: as cluster.csr.review takes them; `bootstrap`: the stack's
    bootstrap is there, so the masters' client requests pass as the workers' do until the API says
    it has handed over. KubeError when the API cannot be asked."""
    unread, verdicts, registered = _judged(kube, nodes, domain, created, settle=settle, untimed=untimed, named=named, bootstrap=bootstrap)
    told = []
    for verdict in verdicts:
        if verdict.approve:
            try:
                kube.approve(verdict.csr)
            except KubeError as error:  # one refused approval ends no pass: it stays pending, said why
                verdict = replace(verdict, approve=False, reason=f"{verdict.reason}, but the API refused its approval ({error})")
        told.append(verdict)
    return Pass((*unread, *told), frozenset(name for name, node in registered.items() if name in nodes and ready(node)))


def judge(
    kube: Kube,
    nodes: Mapping[str, str | Sequence[str]],
    domain: str,
    created: Mapping[str, str] | None = None,
    *,
    settle: timedelta = SETTLE,
    untimed: str | None = UNTIMED,
    bootstrap: bool = False,
) -> tuple[Verdict, ...]:
    """What one pass would decide of every pending request, approving none (`python -m ocp status`); KubeError as one_pass."""
    unread, verdicts, _ = _judged(kube, nodes, domain, created, settle=settle, untimed=untimed, named=None, bootstrap=bootstrap)
    return (*unread, *verdicts)


def _judged(
    kube: Kube, nodes: Mapping[str, str | Sequence[str]], domain: str, created: Mapping[str, str] | None, *,
    settle: timedelta, untimed: str | None, named: Collection[str] | None, bootstrap: bool,
) -> tuple[list[Verdict], list[Verdict], dict[str, dict]]:
    """(the requests that cannot be read, the verdicts of the others, the Node objects by name), read at the API server's time."""
    now = kube.server_time()  # before the list: a request made since is younger than `now` says, never older
    bootstrapping = bootstrap and not kube.bootstrap_complete()
    requests, unread = [], []
    for item in kube.items("certificatesigningrequests"):
        try:
            requests.append(Request.from_object(item))
        except Exception as error:  # noqa: BLE001 - an object no kubelet made: it stays pending, said so
            name = str(((item.get("metadata") or {}) if isinstance(item, dict) else {}).get("name", "(no name)"))
            if named is None or name in named:
                unread.append(Verdict(name, None, "other", False, f"the API's object cannot be read ({type(error).__name__}: {shown(str(error))})"))
    registered = {node["metadata"]["name"]: node for node in kube.items("nodes")}
    verdicts = review(requests, nodes, registered, domain, created, now, settle=settle, untimed=untimed, named=named, bootstrapping=bootstrapping)
    return unread, verdicts, registered


def tell(verdict: Verdict, say: Callable[[str], None], stack: str) -> None:
    # Reasons escape what requesters wrote; the whole line again, so none ever reaches a terminal.
    key = f"; key SHA-256 {verdict.key}" if verdict.key else ""
    if verdict.approve:
        say(shown(f"csr: approved {quoted(verdict.csr)}: {verdict.reason}{key}"))
        return
    say(shown(f"csr: left pending {quoted(verdict.csr)} ({verdict.kind}): {verdict.reason}{key}"))
    if verdict.by_name:
        node = verdict.node
        if DIGESTED_NAME.fullmatch(verdict.csr):
            check = f"`{PENDING_KEY}` prints its key {verdict.key} (the kubelet's pending key)"
        else:
            check = f"`{JOURNAL}` names it (csr=\"{verdict.csr}\")"
        say(shown(
            f"csr:   approve it only if {node}'s kubelet made it: on {node} (its console or ssh), {check}; then: "
            f"python -m ocp approve-csrs --stack {quoted(stack)} --csr {quoted(verdict.csr)}"
        ))
        say(shown(f"csr:   once approved, on {node}: `{ISSUED_KEY}` prints {verdict.key}, or the certificate went to another requester"))


def approve_until_ready(
    kube: Kube,
    nodes: Mapping[str, str | Sequence[str]],
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
    bootstrap: bool = False,
    stop: Callable[[], bool] = lambda: False,
) -> bool:
    """Passes until every node in `wanted` is Ready (True), the deadline or `stop()` (False). Each
    verdict is told once: approvals, and what stays pending with its reason; a failed pass once
    for as long as it fails so (the API comes and goes while masters restart)."""
    told: set[tuple[str, bool, str]] = set()
    failing = ""
    while not stop():
        try:
            result = one_pass(kube, nodes, domain, created, settle=settle, untimed=untimed, bootstrap=bootstrap)
        except Exception as error:  # noqa: BLE001 - no failed pass ends the wait
            text = f"csr: asking the API failed ({shown(str(error)) if isinstance(error, KubeError) else f'{type(error).__name__}: {shown(str(error))}'}); trying again"
            if text != failing:
                say(text)
            failing = text
        else:
            failing = ""
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
        pause = time.monotonic() + interval
        while time.monotonic() < pause and not stop():  # a stop comes within a second, not an interval
            time.sleep(min(0.5, interval))
    return False


@contextmanager
def approving_beside(*args, **kwargs) -> Iterator[None]:
    """approve_until_ready(*args, **kwargs) in a thread while the block runs (`ocp install`'s wait for the
    bootstrap); stopped when the block ends, however it ends."""
    done = threading.Event()
    thread = threading.Thread(target=approve_until_ready, args=args, kwargs={**kwargs, "stop": done.is_set}, name="csr-approver", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=60)  # a pass ends within its kubectl's timeout


def approve_named(
    kube: Kube,
    nodes: Mapping[str, str | Sequence[str]],
    domain: str,
    names: Collection[str],
    say: Callable[[str], None],
    created: Mapping[str, str] | None,
    stack: str,
) -> list[Verdict]:
    """Exactly the named CSRs, each after every check but the settling and the duplicates; the
    verdicts of those approved, every other one told with why not."""
    try:
        found = one_pass(kube, nodes, domain, created, named=set(names)).verdicts
    except KubeError as error:
        say(shown(f"csr: asking the API failed ({error}): nothing approved"))
        return []
    for verdict in found:
        tell(verdict, say, stack)
    for name in sorted(set(names) - {verdict.csr for verdict in found}):
        say(shown(f"csr: no pending request {quoted(name)} (`oc get csr -- {quoted(name)}`: it may be decided already, or deleted)"))
    return [verdict for verdict in found if verdict.approve]


def untimed(platform: str, stack: str) -> str:
    """Why a stack without nodeCreated gets no client approval by itself, and what to do."""
    if platform == "libvirt":
        return "libvirt keeps no creation time for its domains (client certificates are approved automatically only during `python -m ocp install`)"
    return f"the stack's outputs have no nodeCreated (its last `pulumi up` ran release 0.1.0): run `pulumi up --stack {stack}` once, then this again"

"""`python -m ocp status --stack S`: one stack's report, read only. Nothing here takes the stack's lock or
writes the state, the stack file or the cloud: the update history (`pulumi stack history`), the lock files
(ocp/locks.py), the outputs, a refresh preview (`pulumi refresh --preview-only`: the engine takes no lock
for it), the cluster's API (`get` only) and the project's quotas. `report()` returns the data and prints
nothing, so that several stacks can be read side by side; ocp/status_render.py makes the table and the JSON.

Exit codes (CI branches on them): 0 healthy, 1 drift or unhealthy, 2 could not tell (a part that could not be
read, and nothing read says 1)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pulumi import automation as auto

from cluster.csr import role
from cluster.printable import shown
from ocp import keyservice, locks, state_guard
from ocp import status_capacity as capacity_of
from ocp import status_cluster as cluster_of
from ocp.kube import Kube, private_kubeconfig
from ocp.status_capacity import Capacity
from ocp.status_cluster import Cluster
from ocp.status_drift import Change, Step, changes

HEALTHY, ATTENTION, UNKNOWN = 0, 1, 2
# What `python -m ocp` writes in each update's message (ocp/version.py run_message).
RUN_MESSAGE = re.compile(r"^ocp (?P<version>\S+): (?P<command>\S+) by (?P<by>\S+)$")


@dataclass(frozen=True)
class LastUpdate:
    kind: str  # update, refresh, destroy, ...
    result: str  # succeeded, failed, in-progress
    started: datetime
    ended: datetime | None
    by: str  # user@host where `python -m ocp` ran it, else what the history says
    via: str  # python -m ocp, or pulumi (a plain CLI or Automation API run)
    version: str  # this program's release that ran it ("" where the history does not say: a plain pulumi run)


@dataclass(frozen=True)
class Holder:
    holder: str
    pid: int
    since: datetime | None
    state: str  # live, gone, elsewhere, stale, unknown (ocp/locks.py Lock.state)
    where: str


@dataclass(frozen=True)
class LockReading:
    read: bool
    why: str = ""
    holders: tuple[Holder, ...] = ()


@dataclass(frozen=True)
class Drift:
    read: bool
    why: str = ""
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class Report:
    stack: str
    read_at: datetime
    last_update: LastUpdate | None
    history_why: str  # why there is no last update ("" where there is)
    lock: LockReading
    drift: Drift
    cluster: Cluster
    capacity: Capacity

    def problems(self) -> list[str]:
        """What makes the stack need someone: real drift, an unhealthy cluster, a dead lock, no room for a worker."""
        found = [f"drift: {change.resource} ({change.type}) {change.why}" for change in self.drift.changes if not change.expected]
        found += self.cluster.problems() + self.capacity.problems()
        found += [f"a lock of {holder.holder} whose run is {holder.state}" for holder in self.lock.holders if holder.state in ("gone", "stale")]
        if self.last_update and self.last_update.result == "failed":
            found.append(f"its last {self.last_update.kind} failed")
        return found

    def unknowns(self) -> list[str]:
        parts = (("drift", self.drift), ("cluster", self.cluster), ("capacity", self.capacity), ("lock", self.lock))
        return [f"{name}: {part.why}" for name, part in parts if not part.read]

    @property
    def verdict(self) -> str:
        """drift (real drift), unhealthy (anything else of problems()), unknown (a part not read, nothing wrong in the rest), healthy."""
        if any(not change.expected for change in self.drift.changes):
            return "drift"
        if self.problems():
            return "unhealthy"
        return "unknown" if self.unknowns() else "healthy"

    @property
    def exit_code(self) -> int:
        return {"healthy": HEALTHY, "drift": ATTENTION, "unhealthy": ATTENTION, "unknown": UNKNOWN}[self.verdict]


def report(stack: auto.Stack, load_config: Callable[[auto.Stack], object] | None = None) -> Report:
    """One stack's report. `load_config`: the stack file's config (driver._config); where it does not load, the
    cluster and the capacity cannot be told (the rest still is)."""
    name = stack.name
    last, history_why = last_update(stack)
    config, config_why = None, ""
    if load_config is not None:
        try:
            config = load_config(stack)
        except Exception as error:  # noqa: BLE001 - a stack file that does not load: said, the rest still read
            config_why = f"the stack's config does not load ({shown(str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__)})"
    else:
        config_why = "no stack config read"
    outputs, outputs_why = _outputs(stack)
    return Report(
        stack=name,
        read_at=datetime.now(UTC),
        last_update=last,
        history_why=history_why,
        lock=lock_reading(stack),
        drift=drift(stack),
        cluster=_cluster(config, outputs, name) if config is not None and outputs is not None else Cluster(False, config_why or outputs_why),
        capacity=capacity_of.read(config) if config is not None else Capacity(False, config_why),  # type: ignore[arg-type]
    )


def last_update(stack: auto.Stack) -> tuple[LastUpdate | None, str]:
    try:
        history = stack.history(page_size=1, page=1, show_secrets=False)
    except auto.CommandError as error:
        return None, f"`pulumi stack history` failed: {shown(str(error).strip()[-300:])}"
    if not history:
        return None, "the stack has no update yet"
    entry = history[0]
    found = RUN_MESSAGE.match(entry.message or "")
    by = found["by"] if found else ""
    return LastUpdate(
        kind=entry.kind, result=entry.result, started=_utc(entry.start_time), ended=_utc(entry.end_time) if entry.end_time else None,
        by=shown(by or "not recorded (a plain pulumi run on a file or s3 backend records no user)"),
        via="python -m ocp" if found else "pulumi",
        version=found["version"] if found else "",
    ), ""


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def lock_reading(stack: auto.Stack) -> LockReading:
    found = locks.find(stack)
    if found.skipped or found.store is None:
        return LockReading(False, found.skipped or "no store")
    now = datetime.now(UTC)
    return LockReading(True, holders=tuple(
        Holder(lock.holder if lock.since else "", lock.pid, lock.since, lock.state(now), shown(found.store.where(lock.key))) for lock in found.locks
    ))


def drift(stack: auto.Stack) -> Drift:
    """The refresh preview's steps, judged (ocp/status_drift.py)."""
    steps: list[Step] = []

    def seen(event: auto.EngineEvent) -> None:
        outputs = event.res_outputs_event
        if outputs is None:
            return
        step = outputs.metadata
        op = getattr(step.op, "value", step.op)
        if op in ("update", "delete", "same"):  # a `same` may still differ in outputs the program does not set
            steps.append(Step(op, step.type, step.urn, (step.old.outputs if step.old else None) or {}, (step.new.outputs if step.new else None) or {}))

    try:
        stack.preview_refresh(on_event=seen)
    except auto.CommandError as error:  # the stack's key (Vault) in words where it is that
        return Drift(False, shown(keyservice.problem(str(error)) or f"the refresh preview failed: {str(error).strip()[-400:]}"))
    return Drift(True, changes=changes(steps, stack.name))


def _outputs(stack: auto.Stack) -> tuple[dict | None, str]:
    try:
        return {key: value.value for key, value in stack.outputs().items()}, ""
    except auto.CommandError as error:
        return None, f"the stack's outputs could not be read: {shown(str(error).strip()[-300:])}"


def _cluster(config, outputs: dict, name: str) -> Cluster:
    from ocp.approver import untimed

    if not outputs.get("kubeconfig"):
        return Cluster(False, "the stack has no kubeconfig output (not installed yet)")
    try:
        kubeconfig = state_guard.checked_kubeconfig(outputs["kubeconfig"], ValueError)
    except ValueError as error:
        return Cluster(False, str(error))
    nodes = outputs.get("nodes") or {}
    created = outputs.get("nodeCreated")
    why = untimed(config.platform, name)  # as approve-csrs judges
    with private_kubeconfig(kubeconfig) as path:
        kube = Kube(config.installer.oc, Path(path), timeout=15)
        return cluster_of.read(
            kube, kubeconfig, nodes, config.cluster_domain, created, name, why, bootstrap=any(role(node) == "bootstrap" for node in nodes)
        )

"""Drift, from a refresh preview (`pulumi refresh --preview-only`, which writes nothing): what the cloud holds
that the state does not say, per resource and output key, told apart from what the running cluster adds on
purpose, with what to run about each. Pure Python: the steps come in as plain data.

What the real engine (Pulumi 3.274.1, pulumi-openstack 5.5.3) reports, seen in tests/e2e/test_status.py: each
resource's refresh outputs event carries the state's and the cloud's outputs and no key list (the keys are
found here by comparing them), with op `delete` (gone from the cloud), `update` (an input the program sets
differs, a port's name say) or `same`, which it also gives where only outputs the program does not set
differ (a port's admin state, what the cluster added to a node's port): those are compared too. What the
program keeps on a node's port (components/openstack/machines.py CLUSTER_KEPT: an EgressIP's address pair, a
LoadBalancer Service's lb-sg-* group) is told apart as kept when it only grew. A refresh preview only reads:
`python -m ocp up` alone does not see drift (its preview compares the program with the state), so the way
back is a `pulumi refresh` first."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# What a node's port holds that the running cluster adds to (components/openstack/machines.py CLUSTER_KEPT, and
# the provider's computed list of every group): growing, they are the cluster's; shrinking, they are drift.
KEPT_ON_PORTS = ("allowedAddressPairs", "securityGroupIds", "allSecurityGroupIds")
PORT = "openstack:networking/port:Port"
SERVER = "openstack:compute/instance:Instance"
RULE = "openstack:networking/secGroupRule:SecGroupRule"
# What a refresh reads back on a freshly deployed dev stack on the local cloud with nothing done by hand (seen in
# tests/localcloud/test_status.py): the state caught up with what came after each create (a port's server, a
# group's members, the roles Keystone implies, Nova's echo of the hints), not drift.
CAUGHT_UP = {
    PORT: ("deviceId", "deviceOwner"),
    "openstack:compute/serverGroup:ServerGroup": ("members",),
    "openstack:identity/applicationCredential:ApplicationCredential": ("roles",),
    SERVER: ("schedulerHints",),
}
# Outputs the provider keeps for itself, and the cloud's own time of a resource's last change (Nova's `updated`
# moves with its own bookkeeping; a change that matters shows under its own key).
INTERNAL = ("__meta", "__pulumi_raw_state_delta", "__defaults", "updated", "updatedAt")


@dataclass(frozen=True)
class Step:
    """One resource's refresh step as the engine's outputs event tells it."""

    op: str  # the engine's: update, delete, same
    type: str
    urn: str
    old: Mapping[str, Any]
    new: Mapping[str, Any]


@dataclass(frozen=True)
class Change:
    resource: str  # the resource's name (the URN's last part)
    type: str
    op: str  # changed (update) or gone (delete)
    keys: tuple[str, ...]  # the output keys that drifted, sorted (empty for gone, and where only `kept` changed)
    kept: tuple[str, ...]  # the keys that changed by the running cluster's own additions, which the program keeps
    why: str
    run: str  # what to run about it ("" when nothing)
    id: str = ""  # the cloud's ID, where the state has one

    @property
    def expected(self) -> bool:
        """Only the cluster's own additions changed: no drift."""
        return self.op == "changed" and not self.keys


def changes(steps: Iterable[Step], stack: str) -> tuple[Change, ...]:
    """Every step the engine calls `update` or `delete`, and every `same` whose outputs differ, judged; sorted by
    resource then type."""
    found = [_judged(step, stack) for step in steps if step.op in ("update", "delete") or (step.op == "same" and _differs(step))]
    return tuple(sorted(found, key=lambda change: (change.resource, change.type)))


def _differs(step: Step) -> bool:
    return bool(set(keys_of(step.old, step.new)) - set(CAUGHT_UP.get(step.type, ())))


def keys_of(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(key for key in set(old) | set(new) if key not in INTERNAL and not _alike(old.get(key), new.get(key))))


def _alike(old: Any, new: Any) -> bool:
    """Equal, or both empty: a key the program left unset reads back as `[]` or `{}` (a port made without tags)."""
    return old == new or (old in (None, [], {}) and new in (None, [], {}))


def _judged(step: Step, stack: str) -> Change:
    name = step.urn.rsplit("::", 1)[-1]
    ident = str(step.old.get("id") or "")
    refresh_then_up = f"`pulumi refresh --stack {stack} --yes` (the state learns what the cloud holds), then `python -m ocp up --stack {stack}`"
    if step.op == "delete":
        if step.type == SERVER:
            why = "the server is gone from the cloud"
            run = f"{refresh_then_up} makes a new one, a new node (then `python -m ocp approve-csrs --stack {stack}`; a master: docs/day2.md, Replacing a dead master)"
        else:
            why = "gone from the cloud"
            run = f"{refresh_then_up} makes it again"
        return Change(name, step.type, "gone", (), (), why, run, ident)
    changed = tuple(k for k in keys_of(step.old, step.new) if k not in CAUGHT_UP.get(step.type, ()))
    kept = tuple(k for k in changed if step.type == PORT and k in KEPT_ON_PORTS and _grew(step.old.get(k), step.new.get(k)))
    keys = tuple(k for k in changed if k not in kept)
    if not keys and kept:
        why = "the running cluster's own additions (an EgressIP's address pair, a LoadBalancer Service's lb-sg-* group): `up` keeps them"
        return Change(name, step.type, "changed", (), kept, why, "", ident)
    if step.type == SERVER and "powerState" in keys:
        state = step.new.get("powerState")
        why = f"the server's power state is {state} (the state says {step.old.get('powerState')})"
        run = f"`openstack server start {ident or name}` (or `openstack server unshelve`/`resume` for a shelved or suspended one)"
        return Change(name, step.type, "changed", keys, kept, why, run, ident)
    shown = ", ".join(keys) or "nothing the outputs show"
    return Change(name, step.type, "changed", keys, kept, f"changed in the cloud ({shown})", f"{refresh_then_up} puts the stack's values back", ident)


def _grew(old: Any, new: Any) -> bool:
    """Whether `new` holds every element of `old` and more (lists of plain values or mappings)."""
    if not isinstance(old, list) or not isinstance(new, list):
        return False
    remaining = list(new)
    for item in old:
        if item not in remaining:
            return False
        remaining.remove(item)
    return bool(remaining)

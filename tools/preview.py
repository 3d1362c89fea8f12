"""What the next `pulumi up` does to each resource, worked out as the engine would.

The offline plan (`python -m tools.plan --from PLANDIR`) runs the program against a deployed
state: the `state.json` of an earlier plan. For every resource the program registers, the
engine's steps are reproduced here from the providers' own replacement rules
(`tools/providers.json`, for the provider versions in requirements.txt):

- inputs named in `ignoreChanges` keep their deployed value, but a replacement is made with the
  program's (the engine checks a replacement's inputs anew from the program's: `pulumi up
  --replace` and a trigger's replacement both do so with CLI 3.274.1);
- no change: `same`; a change of a ForceNew input (or one named in `replaceOnChanges`, or
  any change of a type without an update): `replace`; an OpenStack server's flavor:
  `resize` (one reboot), its image: `rebuild` (root disk re-imaged); anything else: `update`;
- an input that referenced a resource replaced delete-first is unknown to the engine, and
  an unknown ForceNew input (or ForceNew list holding it) replaces its resource too;
- what was deployed and is not registered any more: `delete`.

Secrets are compared by value in memory and shown only as "(secret) changed".
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

PROVIDERS_FILE = Path(__file__).resolve().parent / "providers.json"
# Resources whose change disrupts a running node or the network: listed first, flagged.
DISRUPTIVE_TYPES = {
    "openstack:compute/instance:Instance",
    "openstack:blockstorage/volume:Volume",
    "openstack:networking/network:Network",
    "openstack:networking/subnet:Subnet",
    "openstack:networking/router:Router",
    "openstack:networking/routerInterface:RouterInterface",
    "openstack:networking/port:Port",
    "openstack:networking/floatingIp:FloatingIp",
    "libvirt:index/domain:Domain",
    "libvirt:index/network:Network",
    "libvirt:index/volume:Volume",
}
DISRUPTIVE_ACTIONS = {"replace", "delete", "rebuild", "resize"}
# A committed state (tests/states) keeps a large input as this digest of its value.
DIGEST_PREFIX = "[sha256 "
_ORDER = {"replace": 0, "rebuild": 1, "resize": 2, "delete": 3, "create": 4, "update": 5, "same": 6}


@cache
def provider_facts() -> dict[str, Any]:
    return json.loads(PROVIDERS_FILE.read_text())


@dataclass(frozen=True)
class Deployed:
    """One resource as an earlier run left it in the state."""

    type: str
    name: str
    urn: str
    id: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    secret_inputs: tuple[str, ...] = ()
    delete_before_replace: bool = False
    protect: bool = False


@dataclass(frozen=True)
class Change:
    type: str
    name: str
    action: str
    fields: tuple[str, ...] = ()
    reason: str = ""
    ignored: tuple[str, ...] = ()
    secret: bool = False

    @property
    def disruptive(self) -> bool:
        return self.type in DISRUPTIVE_TYPES and self.action in DISRUPTIVE_ACTIONS

    def as_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "type": self.type,
            "name": self.name,
            "action": self.action,
            "fields": list(self.fields),
            "reason": self.reason,
        }
        if self.ignored:
            result["ignored"] = list(self.ignored)
        return result


def digest(value: Any) -> str:
    return f"{DIGEST_PREFIX}{hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()}]"


def _same(deployed: Any, value: Any) -> bool:
    if isinstance(deployed, str) and deployed.startswith(DIGEST_PREFIX) and deployed != value:
        return deployed == digest(value)
    return deployed == value


def with_ignored(inputs: Mapping[str, Any], deployed: Mapping[str, Any], ignore: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """The inputs the engine diffs: ignored properties take their deployed value. Returns
    them and the ignored properties whose value the program did change."""
    effective = copy.deepcopy(dict(inputs))
    suppressed = []
    for path in ignore:
        steps = _steps(path)
        if not _same(_get(deployed, steps), _get(effective, steps)):
            suppressed.append(path)
        # As the engine's PropertyPath.Reset: the deployed value, or none if it had none.
        _reset(effective, steps, _get(deployed, steps))
    return effective, sorted(suppressed)


_ABSENT = object()


def _steps(path: str) -> list[str | int]:
    """`a.b[0].c` -> ["a", "b", 0, "c"]."""
    return [int(part) if part.isdigit() else part for part in re.findall(r"[^.\[\]]+", path)]


def _get(value: Any, steps: list[str | int]) -> Any:
    for step in steps:
        if isinstance(step, int) and isinstance(value, list) and step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, Mapping) and step in value:
            value = value[step]
        else:
            return _ABSENT
    return value


def _reset(value: Any, steps: list[str | int], deployed: Any) -> None:
    """Sets the value at `steps` to the deployed one (or removes it), where its parent exists."""
    parent = _get(value, steps[:-1])
    last = steps[-1]
    if isinstance(last, str) and isinstance(parent, dict):
        if deployed is _ABSENT:
            parent.pop(last, None)
        else:
            parent[last] = copy.deepcopy(deployed)
    elif isinstance(last, int) and isinstance(parent, list) and last < len(parent) and deployed is not _ABSENT:
        parent[last] = copy.deepcopy(deployed)


def changed_paths(old: Any, new: Any, path: str = "") -> list[str]:
    """Paths (`a.b`, `list[2].c`, or the list itself when its length changes) that differ."""
    if isinstance(old, str) and old.startswith(DIGEST_PREFIX):
        return [] if _same(old, new) else [path]
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        result = []
        for key in sorted(set(old) | set(new), key=str):
            if old.get(key) != new.get(key):
                child = f"{path}.{key}" if path else str(key)
                if key in old and key in new:
                    result += changed_paths(old[key], new[key], child)
                else:
                    result.append(child)
        return result
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for index, (a, b) in enumerate(zip(old, new)) for p in changed_paths(a, b, f"{path}[{index}]")]
    return [path] if old != new else []


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", path)


def _ancestors(path: str) -> list[str]:
    """`disks[0].volumeId` -> [`disks[*].volumeId`, `disks[*]`, `disks`]."""
    generic = _generic(path)
    result = [generic]
    while True:
        trimmed = re.sub(r"(\.[^.\[\]]+|\[\*\])$", "", generic)
        if trimmed == generic or not trimmed:
            return result
        generic = trimmed
        result.append(generic)


def _references(value: Any, ids: set[str]) -> bool:
    return isinstance(value, str) and value in ids


def _value_at(document: Any, path: str) -> Any:
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            index = int(part[1:-1])
            document = document[index] if isinstance(document, list) and index < len(document) else None
        else:
            document = document.get(part) if isinstance(document, Mapping) else None
    return document


@dataclass
class Engine:
    """Steps of one run against a deployed state, in registration order."""

    deployed: dict[str, Deployed]
    registered: set[str] = field(default_factory=set)
    changes: list[Change] = field(default_factory=list)
    # Old ids of resources replaced delete-first: inputs that referenced them are unknown.
    gone_first: set[str] = field(default_factory=set)

    def step(
        self,
        type_: str,
        name: str,
        urn: str,
        inputs: dict[str, Any],
        ignore_changes: Iterable[str],
        replace_on_changes: Iterable[str],
        delete_before_replace: bool,
        secret_inputs: Iterable[str],
        custom: bool,
    ) -> tuple[str, dict[str, Any]]:
        """The action for one registration and the inputs the engine keeps for it."""
        self.registered.add(urn)
        old = self.deployed.get(urn)
        if old is None:
            if custom:
                self.changes.append(Change(type_, name, "create", reason="not deployed yet"))
            return "create", inputs
        effective, ignored = with_ignored(inputs, old.inputs, ignore_changes)
        if not custom:
            return "same", effective
        paths = changed_paths(old.inputs, effective)
        secret = any(path.split(".")[0].split("[")[0] in set(secret_inputs) | set(old.secret_inputs) for path in paths)
        action, reason = self._action(type_, old, paths, replace_on_changes)
        fields = tuple(sorted({path.split("[")[0].split(".")[0] for path in paths}))
        ignored_reason = f"ignored (first boot or install only): {', '.join(ignored)}" if ignored else ""
        self.changes.append(
            Change(type_, name, action, fields, "; ".join(r for r in (reason, ignored_reason) if r), tuple(ignored), secret)
        )
        if action == "replace" and (delete_before_replace or self._deletes_first(type_, effective)):
            self.gone_first.add(old.id)
        return action, inputs if action == "replace" else effective

    def _deletes_first(self, type_: str, inputs: Mapping[str, Any]) -> bool:
        facts = provider_facts()["types"].get(type_, {})
        return bool(facts.get("bridgeDeleteBeforeReplaceWhenNameSet")) and inputs.get("name") is not None

    def _action(self, type_: str, old: Deployed, paths: list[str], replace_on_changes: Iterable[str]) -> tuple[str, str]:
        if not paths:
            return "same", ""
        facts = provider_facts()["types"].get(type_)
        if facts is None:
            return "update", "no provider facts for this type: assumed in place"
        replace_on = set(facts.get("replaceOn", [])) | set(replace_on_changes)
        forcing = []
        for path in paths:
            generic = _generic(path)
            if generic in replace_on or any(p.endswith("[*]") and generic.startswith(p[:-3]) for p in replace_on):
                forcing.append(path)
            elif path.rsplit("[", 1)[0] == path and any(p.startswith(f"{generic}[*].") for p in replace_on):
                forcing.append(path)  # a list gained or lost elements whose fields are ForceNew
            elif _references(_value_at(old.inputs, path), self.gone_first) and any(a in replace_on for a in _ancestors(path)):
                forcing.append(path)  # referenced a resource replaced delete-first: unknown, ForceNew
        if forcing:
            return "replace", f"ForceNew: {', '.join(sorted(set(map(_generic, forcing))))}"
        if facts.get("noUpdateFunction"):
            return "replace", "this type has no update: every change replaces"
        tops = {path.split(".")[0].split("[")[0] for path in paths}
        if type_ == "openstack:compute/instance:Instance":
            if tops & {"imageName", "imageId", "personalities"}:
                return "rebuild", "Nova rebuilds the server: its root disk is re-imaged"
            if tops & {"flavorName", "flavorId"}:
                return "resize", "Nova resizes the server: one reboot"
        return "update", "in place"

    def deletions(self) -> list[Change]:
        return [
            Change(
                old.type,
                old.name,
                "delete",
                # The engine refuses to delete a protected resource, before anything runs.
                reason="no longer in the program" + ("; protected: the engine refuses (lower ocp:protect first)" if old.protect else ""),
            )
            for urn, old in self.deployed.items()
            if urn not in self.registered and not old.type.startswith(("pulumi:providers:", "ocp:"))
        ]

    def all_changes(self) -> list[Change]:
        return sorted(
            [*self.changes, *self.deletions()],
            key=lambda change: (not change.disruptive, _ORDER.get(change.action, 9), change.type, change.name),
        )


def table(changes: list[Change], warnings: Iterable[str]) -> str:
    """The preview as a person reads it: disruption first, then the rest, then warnings."""
    lines = []
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.action] = counts.get(change.action, 0) + 1
    lines.append("changes: " + ", ".join(f"{counts[a]} {a}" for a in sorted(counts, key=lambda a: _ORDER.get(a, 9))))
    disruptive = [c for c in changes if c.disruptive]
    lines.append(
        "!! DISRUPTS RUNNING NODES OR THE NETWORK:" if disruptive else "nothing replaces, rebuilds, resizes or deletes a node or the network"
    )
    for change in changes:
        if change.action == "same" and not change.ignored:
            continue
        mark = "!!" if change.disruptive else "  "
        fields = "(secret) changed" if change.secret and change.fields else ", ".join(change.fields)
        detail = "; ".join(part for part in (fields, change.reason) if part)
        lines.append(f"{mark} {change.action:<8} {change.name}  [{change.type.split(':')[-1]}]  {detail}")
    for warning in warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)

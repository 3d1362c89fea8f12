"""The policy pack's rules (policy/guard.py) as checks of the offline plan: the plan's resources
judged as `pulumi preview --policy-pack policy/run` judges them (python -m ocp always runs the
pack), so a stack the preview would refuse is refused here too. The rules are the pack's own
functions, imported from policy/ as the pack imports them; they need `pulumi_policy`, which the
project's virtualenv holds (requirements.txt)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cluster.config import ClusterConfig
from tools.mock_run import ProgramRun

POLICY = Path(__file__).resolve().parent.parent / "policy"
# What a resource's inputs name other resources by (their IDs), as the engine's property dependencies.
REFERENCES = ("securityGroupId", "remoteGroupId")


class Unavailable(Exception):
    """The pack's rules cannot load here (no pulumi_policy)."""


def _guard() -> Any:
    if str(POLICY) not in sys.path:
        sys.path.insert(0, str(POLICY))
    try:
        import guard  # the pack's module, as policy/__main__.py imports it
    except ImportError as error:
        raise Unavailable(f"{error}: `bash .ci/setup` installs pulumi-policy into venv") from None
    return guard


def violations(run: ProgramRun, settings: ClusterConfig) -> list[str]:
    """Every mandatory violation, `rule (resource): what it reported`, one each."""
    guard = _guard()
    from pulumi_policy import EnforcementLevel, PolicyResource, ResourceValidationArgs, StackValidationArgs, StackValidationPolicy

    made: dict[str, Any] = {}
    by_id: dict[str, Any] = {}
    for resource in run.resources:  # parents register before their children
        props = resource.outputs or {}
        judged = PolicyResource(resource.type, props, resource.urn, resource.name, None, None, made.get(resource.parent or ""), [], {})  # type: ignore[arg-type]
        made[resource.urn] = judged
        if resource.id:
            by_id[resource.id] = judged
    for judged in made.values():
        judged.property_dependencies = {key: [by_id[judged.props[key]]] for key in REFERENCES if judged.props.get(key) in by_id}
    # The pack reads the allowed SSH source from the stack file where it runs; here it is the config's.
    networks = {"machineNetwork": ",".join(str(network) for network in settings.machine_networks)}
    allowed = settings.openstack.ssh_allowed_cidr if settings.openstack else None
    said = any(entry.unfiltered_master_ports for entry in settings.openstack.extra_networks) if settings.openstack else False
    config = {**networks, "sshAllowedCidr": str(allowed or settings.machine_network), "unfilteredMasterPorts": said}
    found: list[str] = []

    def reporter(rule: str, name: str = "") -> Any:
        return lambda message, urn=None: found.append(f"{rule} ({(urn or '').rsplit('::', 1)[-1] or name}): {message}")

    for policy in guard.POLICIES:
        if policy.enforcement_level == EnforcementLevel.ADVISORY:
            continue  # what the pack lists only (unfiltered ports): the exposure table says it
        if isinstance(policy, StackValidationPolicy):
            policy.validate(StackValidationArgs(list(made.values())), reporter(policy.name))
            continue
        for judged in made.values():
            args = ResourceValidationArgs(judged.resource_type, judged.props, judged.urn, judged.name, None, None, config)  # type: ignore[arg-type]
            policy.validate(args, reporter(policy.name, judged.name))
    return found


def rules() -> list[str]:
    """The pack's mandatory rules, which a plan passes or not (an advisory one only lists)."""
    from pulumi_policy import EnforcementLevel

    return [policy.name for policy in _guard().POLICIES if policy.enforcement_level != EnforcementLevel.ADVISORY]

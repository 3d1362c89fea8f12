"""Before anything of a stack's state can run (an up, the bootstrap's teardown, a destroy), the state's
commands against this program's own (cluster/state_scripts.py says what and why): one export, no engine
run. No flag skips it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pulumi import automation as auto

from cluster.config import ClusterConfig
from cluster.state_scripts import Difference, differences
from cluster.state_values import kubeconfig_problem
from ocp import keyservice


def check(
    stack: auto.Stack, name: str, config: ClusterConfig | None, stop: Callable[[str], Exception], errors: Callable[[str], str],
    deployment: Mapping[str, Any] | None = None,
) -> None:
    """Raises `stop` naming each resource whose commands this program would not run. `deployment`: an
    export the caller made already (`pulumi stack export --show-secrets`); `config`: None where the
    stack file does not load (its checks then go by shape alone)."""
    if deployment is None:
        with keyservice.decrypting("pulumi stack export", stop, errors):  # --show-secrets: the stack's key first
            deployment = stack.export_stack().deployment or {}
    found = differences(deployment, config, name)
    if found:
        raise stop(report(found, name))


def checked_kubeconfig(kubeconfig: str, stop: Callable[[str], Exception]) -> str:
    """The `kubeconfig` output, or `stop` raised for one of a shape the installer never gives (read without an up
    before it by approve-csrs; `oc` and the installer would run its exec or auth-provider)."""
    wrong = kubeconfig_problem(kubeconfig)
    if wrong:
        raise stop(f"the stack output kubeconfig {wrong}, so nothing was run with it: see docs/teams.md, \"Restoring the state\"")
    return kubeconfig


def config_or_none(load: Callable[[], ClusterConfig]) -> ClusterConfig | None:
    """The stack file's config, or None where it does not load (the state's check then goes by shape alone)."""
    try:
        return load()
    except Exception:  # noqa: BLE001 - any refusal: the program says it again, in its own words
        return None


def report(found: Iterable[Difference], stack: str) -> str:
    """The driver's message: one line per resource, each input named, then what to do."""
    by_resource: dict[str, list[Difference]] = {}
    for difference in found:
        by_resource.setdefault(difference.urn, []).append(difference)
    lines = [
        f"the state of stack {stack} holds commands this program would not run (whoever can write the state can put "
        "anything there, and it runs on this machine with your credentials), so nothing was run:"
    ]
    for items in sorted(by_resource.values(), key=lambda items: items[0].resource):  # as the state lists them varies
        lines.append(f"  {items[0].resource}: " + "; ".join(f"{item.input} {item.why}" for item in items))
    lines.append(
        "If nobody on your team made these changes with another version of this program, the state was tampered with: "
        "restore its last good version from the bucket's object versioning (docs/teams.md, \"Restoring the state\"), then run again. "
        f"A drain or network tag command you reviewed (`pulumi stack export --stack {stack}`) can instead go from the state, "
        f"`pulumi state delete '<its URN>' --stack {stack}`, and the next `python -m ocp up` makes it again from this program"
    )
    return "\n".join(lines)

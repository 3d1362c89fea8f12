"""A refactor must not move what an older release deployed. For each committed state of an older
release (tests/states/<commit>/<stack>, see README.md there), the next `pulumi up` by this program
is all `same`: a renamed component type or resource name without an alias shows up here as
resources created and deleted."""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.states.make import AT
from tools import plan
from tools.mock_run import run_program
from tools.preview import Deployed, Engine, digest, table

STATES = Path(__file__).resolve().parent / "states"
CASES = sorted(directory for directory in STATES.glob("*/*") if (directory / "state.json").is_file())
# The next `pulumi up`, an hour after the older release's.
LATER = (datetime.fromisoformat(AT) + timedelta(hours=1)).timestamp()
# Steps other than `same` that are meant, with why: (release, stack, resource name) -> (action, why).
# Empty: nothing this program changed since the committed releases moves a deployed resource.
# (release, stack, resource) -> (action, why): the changes a later release means to make.
# The integrated stacks of each release (0.1.0 is b6d1d58).
INTEGRATED = (("35e8df7", "dev"), ("b6d1d58", "dev"), ("b6d1d58", "example"))
DRAIN = ("update", "4561287: the drain script takes kubectl as well as oc; a drain command's create does nothing, so the update runs nothing")
MEANT: dict[tuple[str, str, str], tuple[str, str]] = {
    ("35e8df7", stack, f"{cluster}-workers-worker-{index}-drain"): DRAIN
    for stack, cluster in (("dev", "ocp4"), ("standalone", "ocp4"), ("kvm", "kvm4"))
    for index in (0, 1)
} | {
    ("35e8df7", stack, "ocp4-bootstrap-config-credential"): (
        "create",
        "issue 31: the bootstrap's Glance token comes from an application credential that may only read its image; "
        "the running bootstrap keeps its user_data (read at first boot)",
    )
    for stack in ("dev", "standalone")
} | {
    (release, stack, f"ocp4-master-pointers-master-{index}"): (
        "create",
        "issue 35: a master made after install boots from the pointer the running cluster serves, as workers do; the "
        "running masters keep their user_data (read at first boot); with the bootstrap there, the installer's pointer",
    )
    for release, stack in INTEGRATED
    for index in (0, 1, 2)
} | {(release, stack, "ocp4-master-pointers"): ("create", "issue 35: the component of the masters' pointer commands") for release, stack in INTEGRATED} | {
    (release, stack, "ocp4-cleanup-on-destroy"): (
        "update",
        "issue 35: the destroy cleanup is cluster/cleanup_run.py (openstacksdk) and also removes what a live cluster's "
        "controllers add; only its `delete` changes, its create does nothing, so the update runs nothing",
    )
    for release, stack in INTEGRATED
} | {
    (release, stack, "ocp4-cleanup-mark-on-destroy"): (
        "create",
        "issue 50: on destroy, before the servers go, what serves them but names nothing of the cluster (EgressIP "
        "ports, 4.14/4.15 Service load balancers) gets the cluster's tag; its create does nothing",
    )
    for release, stack in INTEGRATED
}
FAKE_KEY = "FAKE tools/sample_installer.py"


def stack_file(directory: Path) -> Path:
    return next(directory.glob("Pulumi.*.yaml"))


@pytest.mark.parametrize("directory", CASES, ids=lambda d: f"{d.parent.name}-{d.name}")
def test_next_up_of_an_older_release_changes_nothing(directory: Path) -> None:
    release = directory.parent.name
    stack, config, _ = plan.stack_config(None, str(stack_file(directory)), None)
    engine = plan.deployed_state(str(directory), stack)
    run = run_program(config, stack=stack, engine=engine, now=LATER)
    changes = engine.all_changes()
    how = (
        f"python -m tools.plan --config-file {stack_file(directory).relative_to(STATES.parent.parent)} "
        f"--at {datetime.fromtimestamp(LATER).astimezone().isoformat()} --from {directory.relative_to(STATES.parent.parent)}"
    )
    unmeant = [c for c in changes if c.action != "same" and MEANT.get((release, stack, c.name), ("",))[0] != c.action]
    assert not unmeant, f"the next `pulumi up` of {stack} as release {release} deployed it ({how}):\n{table(changes, ())}"
    # Components too (the preview lists custom resources only): each registration finds its deployed self.
    moved = [f"  {r.type} {r.name} ({r.urn})" for r in run.resources if r.action == "create" and MEANT.get((release, stack, r.name), ("",))[0] != "create"]
    gone = [f"  {urn}" for urn in sorted(set(engine.deployed) - engine.registered)]
    assert not moved and not gone, (
        f"release {release}'s {stack} holds resources under URNs this program does not register: a type or name "
        "changed without `aliases` (pulumi.Alias(type_=<old type>) or name=...):\n"
        + "\n".join(["registered anew:", *moved, "deployed, not registered:", *gone])
    )


def texts(value: Any) -> Iterator[str]:
    """Every string in the value, and in what it encodes: JSON, data URLs, the installer's bundle
    (`<path> <base64>` lines), base64 key data, gzip."""
    if isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)
    elif isinstance(value, str):
        yield value
        if value.lstrip()[:1] in ("{", "["):
            try:
                yield from texts(json.loads(value))
            except ValueError:
                pass
        encoded = re.findall(r"data:[^,\"]*;base64,([A-Za-z0-9+/=]+)", value)
        encoded += re.findall(r"^\S+ ([A-Za-z0-9+/=]{16,})$", value, re.MULTILINE)
        encoded += re.findall(r"-data: ?([A-Za-z0-9+/=]{64,})", value)
        for payload in encoded:
            try:
                raw = base64.b64decode(payload, validate=True)
                yield from texts((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode())
            except (binascii.Error, UnicodeDecodeError, OSError):
                pass


@pytest.mark.parametrize("directory", CASES, ids=lambda d: f"{d.parent.name}-{d.name}")
def test_a_committed_state_holds_no_real_secret(directory: Path) -> None:
    seen = list(texts(json.loads((directory / "state.json").read_text())))
    keys = [text[max(0, m.start() - 100) : m.start()] for text in seen for m in re.finditer(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", text)]
    assert keys, "the installer's configs and their keys are gone from the state: the scan reads nothing"
    assert all(FAKE_KEY in before for before in keys), "a private key not made by the fake installer"
    registries = {registry for text in seen for registry in re.findall(r'"auths": ?\{"([^"]+)"', text)}
    assert registries == {"fake.example.com"}, f"a pull secret other than tools/plan.py's sample: {registries}"


def test_a_digest_in_a_committed_state_is_compared_by_value() -> None:
    urn = "urn:pulumi:dev::ocp::ocp:x:Y$command:local:Command::file"
    deployed = Deployed("command:local:Command", "file", urn, "file-1", {"create": "cat", "stdin": digest("config v1")}, {})

    def step(stdin: str) -> Engine:
        engine = Engine({urn: deployed})
        engine.step("command:local:Command", "file", urn, {"create": "cat", "stdin": stdin}, (), (), False, (), True)
        return engine

    assert [(c.action, c.fields) for c in step("config v1").changes] == [("same", ())]
    changed = step("config v2").changes
    assert changed[0].action != "same" and changed[0].fields == ("stdin",)

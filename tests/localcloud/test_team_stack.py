"""A team's dev stack (issue 44): its state in the local cloud's Swift through s3api, its secrets under a
real Vault's transit key (`hashivault://`, the team's token that may only encrypt and decrypt with it), run
by the real engine and the install driver on the local OpenStack. Two runs at once: the driver's up makes
the cluster while an install of the same stack stops before anything, naming it; the cloud then holds one
cluster, and a preview shows no change. Read back through Swift's own API, the state object holds
ciphertext where the pull secret, the kubeconfig and the keys are; Vault's audit log shows the stack's key
used by the team's token; a wrong token stops the driver naming VAULT_TOKEN. The fixture's teardown
destroys the stack with the same backend and key."""

from __future__ import annotations

import base64
import json
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import yaml

from harness import vault
from harness.localcloud.layout import STATE_BUCKET
from tests.conftest import PULL_SECRET
from tests.e2e.stand_in import Run
from tests.localcloud.engine import Stack
from tests.localcloud.openstack_stack import inventory, openstack_stack
from tests.localcloud.test_swift_state import swift_objects, swift_read
from tests.localcloud.conftest import state_url

PREFIX = "tests/team-stack"
LOCKS = f"{PREFIX}/.pulumi/locks/organization/ocp/dev/"

pytestmark = pytest.mark.skipif(vault.missing() is not None, reason=str(vault.missing()))


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, vault_server, tmp_path_factory) -> Iterator[Stack]:
    """The committed dev stack, logged in to the state bucket (a prefix of its own), initialised under the Vault key."""
    url = state_url(cloud_env, PREFIX)
    extra = {
        "PULUMI_BACKEND_URL": url,
        **{key: cloud_env[key] for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED")},
        **vault_server.env(),
    }
    yield from openstack_stack("dev", tmp_path_factory.mktemp("team-stack"), cloud, cloud_env, extra_env=extra, secrets_provider=vault_server.secrets_provider)


def driver(stack: Stack, *args: str, env: dict[str, str] | None = None) -> Run:
    """`python -m ocp ARGS` in the stack's project, as a user of the team runs it there."""
    return Run(stack.project, {**stack.env, **(env or {})}, *args, "--stack", stack.name)


def test_one_run_makes_the_cluster_while_a_second_stops_naming_it_then_all_is_clean(cloud, stack, vault_server):
    stack_file = yaml.safe_load((stack.project / "Pulumi.dev.yaml").read_text())
    # The stack's data key, wrapped by Vault's transit key: no passphrase, no salt.
    assert base64.b64decode(stack_file["encryptedkey"]).startswith(b"vault:v1:") and "encryptionsalt" not in stack_file, stack_file
    assert stack_file["secretsprovider"] == vault_server.secrets_provider

    began = time.monotonic()
    first = driver(stack, "up", "--yes")
    deadline = time.monotonic() + 600
    while not swift_objects(cloud, LOCKS):  # its preview takes no lock; its up does
        assert first.process.poll() is None, first.finish()
        assert time.monotonic() < deadline, "the first run never locked the stack"
        time.sleep(0.5)
    (lock,) = swift_objects(cloud, LOCKS)
    fields = json.loads(swift_read(cloud, lock))
    code, out, err = driver(stack, "install").finish()
    assert code == 1 and out == "", (out, err)
    said = err.splitlines()
    assert said[0] == "stopped: stack dev is locked by a run in progress, so nothing was done here:", said
    assert f"pid {fields['pid']}" in said[1] and f"its process runs on this host (lock s3://{STATE_BUCKET}/{lock})" in said[1], said
    code, out, err = first.finish(timeout=1800)
    assert code == 0, (out[-4000:], err[-4000:])
    print(f"the driver's up with state in Swift and secrets under Vault: {time.monotonic() - began:.0f} s")

    # One cluster: each server and port the state holds once in the cloud, and nothing more.
    state = stack.state()
    infra = stack.outputs()["infraId"]
    found = inventory(stack, infra)
    planned = Counter(r["inputs"]["name"] for r in state if r["type"] == "openstack:compute/instance:Instance")
    assert set(planned.values()) == {1} and set(found["servers"]) == set(planned), (found["servers"], planned)
    ports = [r["inputs"]["name"] for r in state if r["type"] == "openstack:networking/port:Port"]
    assert sorted(port["name"] for port in found["ports"].values() if port["name"] in ports) == sorted(ports)
    assert swift_objects(cloud, LOCKS) == {}

    preview = stack.pulumi("preview", "--expect-no-changes", "--diff")
    assert preview.returncode == 0, (preview.stdout + preview.stderr)[-4000:]

    # The state as Swift's own API serves it: secrets as ciphertext only.
    text = swift_read(cloud, f"{PREFIX}/.pulumi/stacks/ocp/dev.json")
    checkpoint = json.loads(text)["checkpoint"]
    assert checkpoint["latest"]["secrets_providers"]["type"] == "cloud"  # gocloud's hashivault keeper
    outputs = stack.outputs()
    shown = json.loads(stack.pulumi("stack", "output", "--json", "--show-secrets").stdout)
    for clear in (PULL_SECRET, shown["kubeadminPassword"], shown["kubeconfig"], "PRIVATE KEY"):
        assert clear not in text
    assert outputs["kubeadminPassword"] == "[secret]" and text.count('"ciphertext"') > 10

    # Vault's audit log: the stack's key, by the team's token (its policy alone), and no key made on first use.
    used = [entry for entry in vault_server.audit() if entry.get("type") == "request"
            and entry["request"]["path"] in (f"transit/decrypt/{vault.KEY}", f"transit/encrypt/{vault.KEY}")]
    assert used and all(set(entry["auth"]["policies"]) <= {"ocp-team", "default"} for entry in used), used[:2]
    assert any(entry["request"]["path"] == f"transit/decrypt/{vault.KEY}" for entry in used)


def test_a_wrong_vault_token_stops_the_driver_naming_it_before_anything(cloud, stack):
    before = swift_objects(cloud, f"{PREFIX}/")
    code, out, err = driver(stack, "up", "--yes", env={"VAULT_TOKEN": "hvs.not-a-token-of-this-vault"}).finish(timeout=600)
    assert code == 1, (out, err)
    assert "VAULT_TOKEN" in err, err
    assert swift_objects(cloud, f"{PREFIX}/") == before  # nothing written, nothing locked

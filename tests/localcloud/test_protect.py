"""ocp:protect with the real engine and OpenStack plugin against the local cloud (issue 26, item 4):
a deployed stack's `pulumi destroy` refuses in its preview, naming the protected masters, network
and installer's record, and deletes nothing;
ocp:protect lowered, the next `pulumi up` changes only the flag; then the destroy goes through."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.localcloud.engine import Stack, needs
from tests.localcloud.openstack_stack import PLUGINS, infra_id, inventory, openstack_stack

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    def small(committed: dict) -> dict:
        # One master and no workers: what protect holds, and little else; no floating IP to take
        # from the shared cloud's quota.
        return {
            **committed,
            "ocp:openstack": dict(committed["ocp:openstack"], apiFloatingIp="none", ingressFloatingIp="none"),
            "ocp:bootstrap": dict(committed["ocp:bootstrap"], helper={"floatingIp": False}),
            "ocp:masters": dict(committed["ocp:masters"], count=1),
            "ocp:workers": dict(committed["ocp:workers"], count=0),
        }

    yield from openstack_stack("standalone", tmp_path_factory.mktemp("standalone-protect"), cloud, cloud_env, edit=small)


def test_destroy_refuses_the_protected_until_protect_is_lowered(stack):
    stack.up()
    deployed = stack.state()
    protected = sorted(r["urn"].rsplit("::", 1)[1] for r in deployed if r.get("protect"))
    assert protected == [
        "installer-run",
        "ocp4-control-plane-master-0",
        "ocp4-control-plane-master-0-port",
        "ocp4-network-network",
        "ocp4-network-router",
        "ocp4-network-subnet",
    ]
    infra = infra_id(stack)
    before = inventory(stack, infra)

    # With its preview, as a user runs it: the preview fails on the protected, so nothing runs.
    # (--skip-preview would delete what is not protected before the engine stops at the rest.)
    refused = stack.pulumi("destroy", "--yes")
    text = refused.stdout + refused.stderr
    print(text[-3000:])
    assert refused.returncode != 0
    # The engine names those its preview reached: the master and the router (the installer's record,
    # which everything depends on, would go last).
    for name in ("ocp4-control-plane-master-0", "ocp4-network-router"):
        assert f"::{name}\" cannot be deleted" in text, text[-3000:]
    # The cloud and the state hold what they did.
    assert [r["urn"] for r in stack.state()] == [r["urn"] for r in deployed]
    after = inventory(stack, infra)
    assert after["servers"].keys() == before["servers"].keys() and after["networks"] == before["networks"]

    # Lowered: the engine's own preview has every resource `same`; the up moves only the flag.
    lowered = {**stack.config(), "ocp:protect": "false"}
    steps, output = stack.steps(lowered)
    assert steps is not None, output[-3000:]
    assert {name: action for name, action in steps.items() if action != "same"} == {}
    stack.up(lowered)
    assert not any(r.get("protect") for r in stack.state())
    assert {r["urn"]: r.get("id") for r in stack.state()} == {r["urn"]: r.get("id") for r in deployed}

    done = stack.pulumi("destroy", "--yes", "--skip-preview")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert stack.state() == []
    left = inventory(stack, infra)
    assert left["servers"] == {} and left["networks"] == {} and left["routers"] == {}

"""The gather after a bootstrap that does not hand over (cluster/gather.py; issue 49, item 4): its words from the stack
file and the address plan, the bootstrap's floating IP from the `bootstrapGather` output only as an IP address; the
output's text itself is never what runs (the driver's side: tests/ocp/test_driver.py)."""

from __future__ import annotations

import shlex

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.gather import gather_argv, gathering
from tests.conftest import stack_config, with_section


def test_the_gather_is_made_from_the_stack_file_and_an_address_never_from_the_outputs_text():
    dev_config = stack_config("dev")
    config = load_config(dev_config)  # the bootstrap has a floating IP (bootstrap.helper.floatingIp's default)
    plan = plan_addresses(config)
    masters = [word for master in plan.masters for word in ("--master", str(master.ip))]
    words = ["openshift-install", "gather", "bootstrap", "--dir", "assets/dev", "--bootstrap"]
    # Its address is the state's (only the cloud knew it), taken only as an IP address; every other word the stack file's.
    shown = shlex.join([*words[:5], "/tmp/elsewhere", "--bootstrap", "203.0.113.9", "--master", "10.0.0.99", "--key", "/tmp/key"])
    assert gather_argv(config, "dev", shown) == [*words, "203.0.113.9", *masters]
    for tampered in ("openshift-install gather bootstrap --bootstrap 10.0.0.9; touch /tmp/owned", "x --bootstrap '203.0.113.9; touch /tmp/owned'",
                     "x --bootstrap -oProxyCommand=x", "touch /tmp/owned", None):
        assert gather_argv(config, "dev", tampered) is None, tampered
    # Without one, the plan's address: the output is not read at all.
    fixed = load_config(with_section(dev_config, "bootstrap", helper={"floatingIp": False}))
    assert gather_argv(fixed, "dev", "touch /tmp/owned") == [*words, str(plan.bootstrap.ip), *masters]
    assert gather_argv(load_config(stack_config("kvm")), "kvm", shown) is None  # libvirt: nothing to gather from
    assert gathering(["openshift-install", "--dir", "a b"]) == "the bootstrap did not complete: gathering its logs (openshift-install --dir 'a b')"

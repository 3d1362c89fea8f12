"""The one-command install of the dev stack (integrated: platform openstack) with the real engine
and OpenStack plugin against the local cloud, the real `openshift-install wait-for` and a real API
server playing the cluster (tests/ocp/played.py), as tests/localcloud/test_install_kvm.py does for
the kvm stack. Judged through the cloud's API (the bootstrap's server gone, the masters and workers
kept), the approvals and what the driver prints."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from harness import kubeapi
from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, needs, structured
from tests.localcloud.test_openstack_faults import OURS
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack
from tests.ocp.driving import Driver, hosts_file, write_oc
from tests.ocp.played import played

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None or kubeapi.missing() is not None, reason=str(needs(*PLUGINS) or kubeapi.missing()))


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("dev-install")
    yield from openstack_stack("dev", work, cloud, cloud_env, oc=write_oc(work))


def test_one_command_installs_the_dev_stack_on_the_local_cloud(stack, tmp_path):
    config = {key: structured(value) for key, value in stack.base.items()}
    domain = f"{config['ocp:clusterName']}.{config['ocp:baseDomain']}"
    assets = stack.project / config["ocp:installer"]["dir"]
    hosts = hosts_file(tmp_path / "hosts", f"api.{domain}")
    driver = Driver(stack, hosts, "install")
    driver.wait_for_line(r"^3/6 waiting for the bootstrap", 1800)
    nodes = json.loads(stack.pulumi("stack", "output", "--json").stdout)["nodes"]
    infra = infra_id(stack)
    made = sdk(stack.cloud, OURS, infra=infra)  # type: ignore[attr-defined]
    assert any(name.endswith("-bootstrap") for name in made["servers"]), made
    with played(tmp_path / "cluster", assets, nodes, domain) as cluster_played:
        driver.wait_for_line(r"for bootstrapping to complete", 300)
        cluster_played.bootstrap_complete()
        code = driver.wait(1800)
        output = driver.text()
        pending = cluster_played.pending()
    print(output)
    assert code == 0, output[-8000:] + "\nplayed: " + "; ".join(cluster_played.events + cluster_played.errors)
    steps = [line[:3] for line in output.splitlines() if re.match(r"^\d/6 ", line)]
    assert steps == ["1/6", "2/6", "3/6", "4/6", "5/6", "6/6"], steps
    # Progress counts out of the run's total, the bootstrap's teardown too (it once said [3/0 ...]).
    progress = [tuple(map(int, m.groups())) for m in re.finditer(r"^\[(\d+)/(\d+) \d+m\d\ds\] ", output, re.M)]
    teardown = output.split("4/6 ", 1)[1].split("5/6 ", 1)[0]
    assert "preview: " in teardown and "to delete" in teardown, teardown
    assert progress and all(0 <= done < total for done, total in progress), progress
    # The cloud: the bootstrap's server gone, every master and worker as before.
    after = sdk(stack.cloud, OURS, infra=infra)  # type: ignore[attr-defined]
    assert sorted(after["servers"]) == sorted(name for name in made["servers"] if not name.endswith("-bootstrap")), after
    for worker in sorted(n for n in nodes if "-worker-" in n):
        assert re.search(rf"^csr: approved csr-{worker}-client: ", output, re.M), output
        assert re.search(rf"^csr: approved csr-{worker}-serving: ", output, re.M), output
    assert set(pending) == {"csr-other-cluster", "csr-wrong-requester"}, pending
    assert "Install complete!" in output
    assert f"console: https://console-openshift-console.apps.{domain}" in output
    password = (assets / "auth" / "kubeadmin-password").read_text().strip()
    assert password not in output

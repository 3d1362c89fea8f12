"""The destroy cleanup's rules (cluster/cleanup.py): what of a project it takes for the cluster's
own and what it leaves to Pulumi or to others. The cleanup itself runs against the local cloud
(tests/localcloud/test_cleanup.py)."""

from __future__ import annotations

from cluster import cleanup
from tools.mock_run import unwrap

INFRA = "ocp4-x7k2p"
TAG = f"openshiftClusterID={INFRA}"
NETWORK = "net-ocp4"


def test_machines_are_found_by_tag_or_metadata_never_by_name_nor_one_of_the_programs_own():
    assert cleanup.machine(INFRA, "gpu-worker-1", [TAG])  # a user's MachineSet name, tagged
    assert cleanup.machine(INFRA, "gpu-worker-2", [], {"openshiftClusterID": INFRA})  # the installer's serverMetadata
    assert cleanup.machine(INFRA, f"{INFRA}-worker-0-x7q2c", [TAG])  # like a worker's name, with a random suffix
    for name in ("master-0", "worker-12", "bootstrap", "bootstrap-helper", "api-port", "ingress-port", "master", "worker"):
        assert not cleanup.machine(INFRA, f"{INFRA}-{name}", [TAG]), name
    assert not cleanup.machine(INFRA, "other-abcde-worker-0", ["openshiftClusterID=other-abcde"])
    assert not cleanup.machine(INFRA, f"{INFRA}-bastion", [])  # a user's server named by the infra ID, untagged
    assert not cleanup.machine(INFRA, f"{INFRA}-worker-gpu-8kd3w", [], {"Name": f"{INFRA}-worker"})
    # Clusters whose infra IDs start with this one's, tagged as theirs.
    assert not cleanup.machine(INFRA, f"{INFRA}q-worker-0", [])
    assert not cleanup.machine(INFRA, f"{INFRA}-x-q9z3m-worker-0-abcde", [f"openshiftClusterID={INFRA}-x-q9z3m"], {"openshiftClusterID": f"{INFRA}-x-q9z3m"})


def test_server_groups_only_by_the_installers_names_and_once_empty():
    zones = {"nova", "az1"}
    assert cleanup.machine_server_group(INFRA, f"{INFRA}-worker-az1", [], zones)  # a MachineSet's per-zone group
    assert not cleanup.machine_server_group(INFRA, f"{INFRA}-worker-az1", ["a-live-server"], zones)
    assert not cleanup.machine_server_group(INFRA, f"{INFRA}-worker", [], zones)  # the program's own: Pulumi's
    assert not cleanup.machine_server_group(INFRA, f"{INFRA}-worker-1", [], zones | {"1"})
    assert not cleanup.machine_server_group(INFRA, f"{INFRA}-bastion", [], zones)  # a user's
    assert not cleanup.machine_server_group(INFRA, f"{INFRA}-worker-az2", [], zones)  # no such zone: not the installer's name
    assert not cleanup.machine_server_group(INFRA, f"{INFRA}-x-q9z3m-worker", [], zones)  # a cluster whose infra ID starts with this one's


def test_load_balancers_by_the_4_16_name_or_by_their_vip_network_and_description():
    networks = {NETWORK}
    described = "Kubernetes external service legacy/web from cluster kubernetes"
    assert cleanup.service_load_balancer(INFRA, f"kube_service_{INFRA}_demo_web", "", "elsewhere", networks)
    # 4.14 and 4.15: `kubernetes` in the name, found by the VIP on the cluster's network.
    assert cleanup.service_load_balancer(INFRA, "kube_service_kubernetes_legacy_web", described, NETWORK, networks)
    assert not cleanup.service_load_balancer(INFRA, "kube_service_kubernetes_legacy_web", described, "another-network", networks)
    assert not cleanup.service_load_balancer(INFRA, "users-own-lb", "an application's", NETWORK, networks)
    assert not cleanup.service_load_balancer(INFRA, f"kube_service_{INFRA}x_demo_web", "", "elsewhere", networks)
    assert cleanup.service_of(described) == "legacy/web"


def test_lb_security_groups_by_their_cluster_or_for_4_14_by_its_ports_or_services():
    mine = f"Security Group for demo/web Service LoadBalancer in cluster {INFRA}"
    legacy = "Security Group for legacy/web Service LoadBalancer in cluster kubernetes"
    assert cleanup.service_group(INFRA, "lb-sg-1-demo-web", mine, "g1", set(), set())
    assert not cleanup.service_group(INFRA, "lb-sg-1-demo-web", mine.replace(INFRA, f"{INFRA}x"), "g1", set(), set())
    assert cleanup.service_group(INFRA, "lb-sg-2-legacy-web", legacy, "g2", {"g2"}, set())
    assert cleanup.service_group(INFRA, "lb-sg-2-legacy-web", legacy, "g2", set(), {"legacy/web"})
    assert not cleanup.service_group(INFRA, "lb-sg-2-legacy-web", legacy, "g2", set(), {"other/web"})  # another 4.14 cluster's
    assert not cleanup.service_group(INFRA, f"{INFRA}-worker", mine, "g3", {"g3"}, set())  # the program's own group


def test_egress_ip_reservations_by_the_server_their_device_id_names():
    """cloud-network-config-controller (pkg/cloudprovider/openstack.go, release-4.14 to main): reserveNeutronIPAddress
    makes `egressip-<ip>` with device_owner OpenShiftEgressIP, device_id generateDeviceID(server) =
    `OpenShiftEgressIP_<server ID>`, no tag and no description: the device_id is all that ties it to a node."""
    servers = {"3f1c7a52-0d5e-4a59-9c1b-6a2f4e8d9b10"}
    assert cleanup.reserved_for("OpenShiftEgressIP", "OpenShiftEgressIP_3f1c7a52-0d5e-4a59-9c1b-6a2f4e8d9b10", servers)
    assert not cleanup.reserved_for("OpenShiftEgressIP", "OpenShiftEgressIP_0b6c1f0e-another-clusters-server", servers)
    assert not cleanup.reserved_for("OpenShiftEgressIP", "3f1c7a52-0d5e-4a59-9c1b-6a2f4e8d9b10", servers)  # not as the controller writes it
    assert not cleanup.reserved_for("compute:nova", "OpenShiftEgressIP_3f1c7a52-0d5e-4a59-9c1b-6a2f4e8d9b10", servers)
    assert not cleanup.reserved_for("OpenShiftEgressIP", None, servers)


def test_a_4_14_load_balancer_is_the_clusters_by_its_members_or_its_tag():
    """cloud-provider-openstack release-4.14/4.15 (pkg/openstack/loadbalancer.go): GetLoadBalancerName
    `kube_service_<cluster>_<ns>_<svc>`, description `Kubernetes external service <ns>/<svc> from cluster <cluster>`,
    tags [its name]; the cluster name is `kubernetes` there (cluster-cloud-controller-manager-operator passes
    --cluster-name=$(OCP_INFRASTRUCTURE_NAME) from release-4.16). Off the cluster's own network only its members tell."""
    legacy = "Kubernetes external service legacy/web from cluster kubernetes"
    assert cleanup.legacy_service_load_balancer(legacy)
    assert not cleanup.legacy_service_load_balancer(f"Kubernetes external service demo/web from cluster {INFRA}")
    assert not cleanup.legacy_service_load_balancer("an application's own")
    nodes = {("subnet-1", "10.20.0.11"), ("subnet-1", "10.20.0.12")}
    assert cleanup.serves([("subnet-1", "10.20.0.12"), ("subnet-1", "10.20.0.99")], nodes)
    assert not cleanup.serves([("subnet-1", "10.20.0.99")], nodes)  # another cluster's nodes on the same subnet
    assert not cleanup.serves([("subnet-2", "10.20.0.11")], nodes)  # the same address on another subnet
    assert not cleanup.serves([], nodes)
    # On a given network it is neither on the cluster's network nor named by the infra ID: the mark's tag finds it.
    name = "kube_service_kubernetes_legacy_web"
    assert not cleanup.service_load_balancer(INFRA, name, legacy, "given", {NETWORK}, [name])
    assert cleanup.service_load_balancer(INFRA, name, legacy, "given", {NETWORK}, [name, TAG])
    assert not cleanup.service_load_balancer(INFRA, name, legacy, "given", {NETWORK}, [name, f"{TAG}x"])
    group = "Security Group for legacy/web Service LoadBalancer in cluster kubernetes"
    assert cleanup.service_group(INFRA, "lb-sg-2-legacy-web", group, "g2", set(), set(), [TAG])
    assert not cleanup.service_group(INFRA, f"{INFRA}-master", "", "g3", set(), set(), [TAG])  # the program's own, tagged too


def test_the_mark_is_the_cleanup_run_with_its_step_set():
    script = cleanup.mark_script()
    assert script.startswith(f"export {cleanup.STEP}={cleanup.MARK}\n") and script.endswith(cleanup.cleanup_script())


def test_ports_left_on_the_network_but_the_programs_and_neutrons_own():
    assert cleanup.leftover_port(INFRA, "egressip-10.0.255.254", "OpenShiftEgressIP")
    assert cleanup.leftover_port(INFRA, "", "")  # a port someone made on the cluster's network
    assert not cleanup.leftover_port(INFRA, f"{INFRA}-api-port", "")
    assert not cleanup.leftover_port(INFRA, f"{INFRA}-master-2", "compute:nova")
    assert not cleanup.leftover_port(INFRA, "", "network:router_interface")
    assert not cleanup.leftover_port(INFRA, "", "compute:az1")  # a live server's, which the cleanup did not take for the cluster's


def test_csi_volumes_snapshots_and_shares_by_their_cluster_key():
    assert cleanup.csi_owned(INFRA, {"cinder.csi.openstack.org/cluster": INFRA})
    assert not cleanup.csi_owned(INFRA, {"cinder.csi.openstack.org/cluster": "other"})
    assert not cleanup.csi_owned(INFRA, None)
    assert cleanup.csi_owned(INFRA, {"manila.csi.openstack.org/cluster": INFRA}, cleanup.MANILA_CSI_CLUSTER)


def test_volume_retries_last_minutes():
    # The installer backs off over minutes; a volume still detaching for a minute must outlast it.
    assert 300 <= sum(cleanup.VOLUME_RETRIES) <= 900


def test_nothing_pulumi_deletes_in_the_same_destroy_is_taken(dev_helper_run):
    """Every name the plan gives a server, port or server group is left to Pulumi."""
    infra = dev_helper_run.outputs["infraId"]
    named = {
        unwrap(r.inputs["name"]).replace(infra, INFRA)
        for r in dev_helper_run.resources
        if r.type.endswith(("/instance:Instance", "/port:Port", "/serverGroup:ServerGroup"))
    }
    assert {f"{INFRA}-master-0", f"{INFRA}-worker-0", f"{INFRA}-api-port", f"{INFRA}-worker", f"{INFRA}-bootstrap-helper"} <= named
    assert [name for name in named if cleanup.machine(INFRA, name, [TAG]) or cleanup.leftover_port(INFRA, name, "compute:nova")] == []

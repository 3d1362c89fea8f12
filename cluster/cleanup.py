"""What `pulumi destroy` removes first in integrated mode: what the cluster made in OpenStack itself.

An integrated cluster's controllers make resources Pulumi never registered (FACTS §12; the
installer's `destroy cluster`, pkg/destroy/openstack, finds them by the infra ID). Left
behind they block deleting the subnet and network, leak quota (security groups) or storage,
or hold the cluster's secrets (images):

- load balancers of LoadBalancer Services (where the catalog has Octavia): named
  `kube_service_<infraID>_<ns>_<svc>` from 4.16, `kube_service_kubernetes_<ns>_<svc>` on 4.14
  and 4.15 (the cloud provider's cluster name), so found by either that name or their VIP on the
  cluster's network with a description starting `Kubernetes external service`; with the
  floating IPs on their VIP ports;
- servers of MachineSets, by the cluster's tag `openshiftClusterID=<infraID>` or metadata
  `openshiftClusterID: <infraID>` (the installer's MachineSets set both; its destroy reads the
  metadata), never by name: a user's `<infraID>-bastion`, or a cluster whose infra ID starts with
  this one's, is not the cluster's; and the trunks their ports are parents of (tagged alike; a
  parent port refuses deletion while its trunk exists);
- Cinder CSI volumes and their snapshots (metadata `cinder.csi.openstack.org/cluster=<infraID>`;
  Cinder refuses to delete a volume that has snapshots), and Manila CSI shares and theirs where
  the catalog has Manila (`manila.csi.openstack.org/cluster`);
- EgressIP reservations (cloud-network-config-controller: untagged ports `egressip-<ip>`,
  device_owner `OpenShiftEgressIP`, device_id `OpenShiftEgressIP_<server ID>`) and any other port left on
  the cluster's network;
- server groups the Machine API made, which Nova cannot tag: only the names the installer's
  MachineSets give (`<infraID>-master`, `<infraID>-worker`, `<infraID>-worker-<zone>`,
  pkg/asset/machines/openstack/machines.go) that no server is a member of any more (a running
  server's group, or another cluster's, holds members); any other is named and left;
  the cloud provider's `lb-sg-*` groups (untagged,
  described `... in cluster <infraID>`, or `in cluster kubernetes` on 4.14/4.15 and then known
  by the cluster's ports or load balancers), Glance images tagged with the infra ID (copies of
  the bootstrap config an interrupted `pulumi up` left), and the image registry's Swift
  container where the catalog has Swift.

Never what Pulumi deletes in the same destroy: this program tags its own servers, ports and
floating IPs with the infra ID and names them `<infraID>-...` too, so the cleanup leaves the
names it gives (`OURS`) and touches no floating IP but a load balancer's. A Machine API machine
is named `<MachineSet>-<5 random characters>`, which none of these is.

On a network the user gave (ocp:openstack.existingNetwork) neither the network's tag nor its name is
the cluster's, and other projects' ports and other clusters' live there (a network's owner may see and
delete every port on it): nothing is taken for being on it. The EgressIP reservations and the 4.14/4.15
load balancers name nothing of the cluster, so they are told by what they serve, read while the servers
still exist: a reservation whose device_id names one of the cluster's servers, a `... from cluster
kubernetes` load balancer with a member at one of their addresses, an `lb-sg-*` group on one of their
ports; each in this project. A second command, deleted before any server (it depends on them all), tags
those with the cluster's tag (`mark`); the cleanup marks again first (the Machine API's servers are still
there then), and takes what carries the tag. The installer's destroy finds neither on such a network (it
looks for them only on networks tagged as the cluster's, v1.4.19-ec5 pkg/destroy/openstack,
deleteNetworks, deleteLeftoverLoadBalancers, deletePortsByNetwork).

It runs as the `delete` of a command that depends on the network, subnet, router, router
interface and security groups, and that the masters, the workers and the bootstrap's Glance
image depend on: the engine runs it after those are gone and before the network and groups go.
The work is cluster/cleanup_run.py, with openstacksdk (pagination, waits, retries) in the
program's own virtualenv; the command's script only finds that Python. What it cannot delete it
names, and it then fails, so the command stays in the state and the next `pulumi destroy` runs it
again. It prints IDs only; the credentials stay in clouds.yaml (OS_CLOUD names the entry).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

# Names of this program's own servers, ports and server groups after `<infraID>-`.
OURS = r"(bootstrap|bootstrap-helper|api-port|ingress-port|master|worker|(master|worker)-[0-9]+)"
# The tag's key, also the server metadata key the installer's MachineSets set (serverMetadata).
CLUSTER_KEY = "openshiftClusterID"
CINDER_CSI_CLUSTER = "cinder.csi.openstack.org/cluster"
MANILA_CSI_CLUSTER = "manila.csi.openstack.org/cluster"
# cloud-provider-openstack's load balancer names and descriptions (pkg/openstack/loadbalancer.go).
SERVICE_PREFIX = "kube_service_"
SERVICE_DESCRIPTION = "Kubernetes external service"
# Its cluster name before 4.16, where the CCM operator passes none.
LEGACY_CLUSTER_NAME = "kubernetes"
# cloud-network-config-controller's reservation ports (pkg/cloudprovider/openstack.go, release-4.14 to main:
# reserveNeutronIPAddress, generateDeviceID): device_owner, and device_id `OpenShiftEgressIP_<server ID>`.
EGRESS_IP_OWNER = "OpenShiftEgressIP"
# Seconds between volume delete attempts (a volume still detaching is refused): about 10 minutes in all.
VOLUME_RETRIES = (5, 10, 15, 20, 30, 30, 60, 60, 60, 60, 60, 60, 90, 90)

# The command's `delete`: the program's venv (Pulumi.yaml `virtualenv: venv`, relative to the project
# directory the engine runs commands in) has openstacksdk; python3 is tried next.
CLEANUP_SCRIPT = r"""set -u
: "${OS_CLOUD:?}" "${INFRA_ID:?}"
for python in "${OCP_CLEANUP_PYTHON:-venv/bin/python}" python3; do
  if command -v "$python" >/dev/null 2>&1 && "$python" -c 'import openstack, cluster.cleanup_run' 2>/dev/null; then
    exec "$python" -m cluster.cleanup_run
  fi
done
echo "cleanup: no Python with openstacksdk and this program in $(pwd) (the program's venv/): load balancers, volumes and servers the cluster ${INFRA_ID} made may be left behind" >&2
exit 0
"""


# The program's own per-zone server groups (<role>.serverGroupPerZone) bear the names the installer's
# MachineSets give theirs (<infraID>-worker-<zone>): the script names their zones, by role, in this variable.
OWN_GROUP_ZONES = "OCP_OWN_GROUP_ZONES"


# Which of cluster.cleanup_run's steps the script runs: unset, the cleanup; `mark`, the tagging before the servers go.
STEP = "OCP_CLEANUP_STEP"
MARK = "mark"


def cleanup_script(own_group_zones: Mapping[str, Sequence[str]] | None = None) -> str:
    """The `delete` of the cleanup command (bash), reading OS_CLOUD and INFRA_ID; with the zones of the
    program's own per-zone server groups, which Pulumi deletes (without, the script of stacks made before)."""
    if not own_group_zones:
        return CLEANUP_SCRIPT
    return f"export {OWN_GROUP_ZONES}={shlex.quote(json.dumps(dict(own_group_zones), sort_keys=True))}\n" + CLEANUP_SCRIPT


def mark_script() -> str:
    """The `delete` of the command that runs before the servers go: it tags what the cleanup must find by the tag."""
    return f"export {STEP}={MARK}\n" + CLEANUP_SCRIPT


def tag(infra_id: str) -> str:
    return f"{CLUSTER_KEY}={infra_id}"


def ours(infra_id: str, name: str | None) -> bool:
    """A name this program gives its own servers, ports and server groups (Pulumi deletes those)."""
    return re.fullmatch(re.escape(infra_id) + "-" + OURS, name or "") is not None


def machine(infra_id: str, name: str | None, tags: Iterable[str], metadata: Mapping[str, str] | None = None) -> bool:
    """A server the Machine API made: the cluster's tag or metadata (a name proves nothing), not one of ours."""
    return (tag(infra_id) in tags or (metadata or {}).get(CLUSTER_KEY) == infra_id) and not ours(infra_id, name)


def own_server_group(infra_id: str, name: str | None, own_group_zones: Mapping[str, Iterable[str]]) -> bool:
    """One of this program's server groups: ours(), or per zone <infraID>-<role>-<zone> and -<zone>-N."""
    return ours(infra_id, name) or any(
        re.fullmatch(re.escape(f"{infra_id}-{role}-{zone}") + r"(-[0-9]+)?", name or "") is not None
        for role, zones in own_group_zones.items()
        for zone in zones
    )


def machine_server_group(
    infra_id: str, name: str | None, members: Iterable[str], zones: Iterable[str], own_group_zones: Mapping[str, Iterable[str]] | None = None
) -> bool:
    """A server group the Machine API made for the installer's MachineSets or the plan's example ones
    (<infraID>-worker-extra[-N], theirs where the stack's groups have a size): one of the names they give
    (not one of ours, which Pulumi deletes) and empty now that the cluster's servers are gone."""
    names = {f"{infra_id}-{role}" for role in ("master", "worker")} | {f"{infra_id}-worker-{zone}" for zone in zones if zone}
    example = re.fullmatch(re.escape(f"{infra_id}-worker-extra") + r"(-[0-9]+)?", name or "") is not None
    return (name in names or example) and not own_server_group(infra_id, name, own_group_zones or {}) and not list(members)


def service_load_balancer(
    infra_id: str, name: str | None, description: str | None, vip_network_id: str | None, networks: set[str], tags: Iterable[str] = ()
) -> bool:
    """A LoadBalancer Service's load balancer: the 4.16+ name, or (any release) its VIP on the
    cluster's network and the cloud provider's description (the installer's deleteLeftoverLoadBalancers),
    or the cluster's tag (`mark`: a 4.14/4.15 one serving the cluster on a given network)."""
    if (name or "").startswith(f"{SERVICE_PREFIX}{infra_id}_") or tag(infra_id) in tags:
        return True
    return vip_network_id in networks and (description or "").startswith(SERVICE_DESCRIPTION)


def reserved_for(device_owner: str | None, device_id: str | None, servers: set[str]) -> bool:
    """An EgressIP reservation port held for one of these servers (its device_id names the server)."""
    prefix = f"{EGRESS_IP_OWNER}_"
    return device_owner == EGRESS_IP_OWNER and (device_id or "").startswith(prefix) and (device_id or "")[len(prefix):] in servers


def legacy_service_load_balancer(description: str | None) -> bool:
    """A load balancer the cloud provider made under its 4.14/4.15 cluster name, which is no cluster's own."""
    return re.fullmatch(re.escape(SERVICE_DESCRIPTION) + r" \S+/\S+ from cluster " + LEGACY_CLUSTER_NAME, description or "") is not None


def serves(members: Iterable[tuple[str | None, str | None]], addresses: set[tuple[str, str]]) -> bool:
    """Whether a pool member (subnet ID, address) is one of the cluster's servers' (the cloud provider's members are
    the cluster's nodes: another cluster on the same subnet has other addresses)."""
    return any((subnet, address) in addresses for subnet, address in members)


def service_of(description: str | None) -> str | None:
    """`<ns>/<svc>` from a load balancer's description (`Kubernetes external service <ns>/<svc> from cluster <name>`)."""
    found = re.match(re.escape(SERVICE_DESCRIPTION) + r" (\S+/\S+) from cluster ", description or "")
    return found.group(1) if found else None


def service_group(
    infra_id: str, name: str | None, description: str | None, group_id: str, on_cluster_ports: set[str], legacy_services: set[str],
    tags: Iterable[str] = (),
) -> bool:
    """A cloud provider's `lb-sg-*` group of this cluster: described as the infra ID's, or tagged as the
    cluster's (`mark`); or, where the cluster name was `kubernetes` (4.14, 4.15), on the cluster's ports or of
    one of its load balancers' Services."""
    if not (name or "").startswith("lb-sg-"):
        return False
    description = description or ""
    if description.endswith(f" in cluster {infra_id}") or tag(infra_id) in tags:
        return True
    legacy = re.fullmatch(r"Security Group for (\S+/\S+) Service LoadBalancer in cluster " + LEGACY_CLUSTER_NAME, description)
    return legacy is not None and (group_id in on_cluster_ports or legacy.group(1) in legacy_services)


def leftover_port(infra_id: str, name: str | None, device_owner: str | None) -> bool:
    """A port on the cluster's network that Pulumi does not own, Neutron does not keep for a router
    or DHCP, and no live server holds (the cluster's servers are gone by now; a port a server held
    loses its `compute:` owner when the server goes)."""
    return not ours(infra_id, name) and not (device_owner or "").startswith(("network:", "compute:"))


def volume_retries(patience: str | None = None) -> tuple[int, ...]:
    """The pauses between volume delete attempts, within `patience` seconds when given (a test's shorter wait)."""
    if not patience:
        return VOLUME_RETRIES
    pauses, total = [], 0
    for pause in VOLUME_RETRIES:
        pause = min(pause, int(patience) - total)
        if pause <= 0:
            break
        pauses.append(pause)
        total += pause
    return tuple(pauses)


def csi_owned(infra_id: str, metadata: Mapping[str, str] | None, key: str = CINDER_CSI_CLUSTER) -> bool:
    return (metadata or {}).get(key) == infra_id

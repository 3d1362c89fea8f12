"""What `pulumi destroy` removes first in integrated mode: what the cluster made in OpenStack itself.

An integrated cluster creates resources Pulumi never registered (the installer's
`destroy cluster` finds them by the infra ID): Octavia load balancers of LoadBalancer
Services (the cloud provider names them `kube_service_<infraID>_<namespace>_<service>`)
with floating IPs on their VIP ports, Cinder volumes of PVCs (Cinder CSI sets the metadata
`cinder.csi.openstack.org/cluster=<infraID>`), and servers and ports of user MachineSets
(tagged `openshiftClusterID=<infraID>`, as this program tags its own; servers also named
`<infraID>-...`). Left behind, they
block deleting the subnet and network.

The script runs as the `delete` of a command that depends on the network, subnet, router,
router interface and security groups, so the engine runs it before deleting those. Order:
each load balancer's floating IPs, then the load balancer (cascade: listeners, pools, its
VIP port); servers (waiting, so their volumes detach and their ports go); then volumes,
tagged floating IPs and tagged ports. Every step tolerates things already gone and never
fails the destroy: what it cannot delete it names on stderr. It prints IDs only; the
credentials stay in clouds.yaml (OS_CLOUD names the entry).
"""

from __future__ import annotations

CLEANUP_SCRIPT = r"""set -u
: "${OS_CLOUD:?}" "${INFRA_ID:?}"
tag="openshiftClusterID=${INFRA_ID}"

if ! command -v openstack >/dev/null 2>&1; then
  echo "cleanup: no openstack CLI: load balancers, volumes and servers the cluster ${INFRA_ID} made may be left behind" >&2
  exit 0
fi

# Prints the listing's rows; a failed listing counts as nothing found, and is said so.
list() {
  if ! "$@" 2>/dev/null; then
    echo "cleanup: could not list ($*): check the project for what ${INFRA_ID} left" >&2
  fi
}

delete() {
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then
    echo "cleanup: deleted ${what}"
  else
    echo "cleanup: could not delete ${what} (already gone?)" >&2
  fi
}

# Load balancers of LoadBalancer Services: first the floating IPs on their VIP ports (a
# deleted port would leave them allocated), then the load balancer and all it holds.
for lb in $(list openstack loadbalancer list -f value -c id -c name | awk -v prefix="kube_service_${INFRA_ID}_" 'index($2, prefix) == 1 { print $1 }'); do
  port=$(openstack loadbalancer show "$lb" -f value -c vip_port_id 2>/dev/null || true)
  if [ -n "$port" ]; then
    for fip in $(list openstack floating ip list --port "$port" -f value -c ID); do
      delete "floating IP ${fip} of load balancer ${lb}" openstack floating ip delete "$fip"
    done
  fi
  delete "load balancer ${lb}" openstack loadbalancer delete --cascade --wait "$lb"
done

# Servers (MachineSets' and any left of ours), by tag (Nova filters by tag from compute API
# 2.26; older clients default lower) and by the name prefix the Machine API gives them:
# waiting, so their volumes detach and their ports go.
servers=$(
  list openstack --os-compute-api-version 2.26 server list --tags "$tag" -f value -c ID
  list openstack server list --name "^${INFRA_ID}-" -f value -c ID
)
for server in $(printf '%s\n' "$servers" | sort -u); do
  delete "server ${server}" openstack server delete --wait "$server"
done

# Volumes of PVCs, now that no server holds them.
for volume in $(list openstack volume list --property "cinder.csi.openstack.org/cluster=${INFRA_ID}" -f value -c ID); do
  delete "volume ${volume}" openstack volume delete --force "$volume"
done

for fip in $(list openstack floating ip list --tags "$tag" -f value -c ID); do
  delete "floating IP ${fip}" openstack floating ip delete "$fip"
done

for port in $(list openstack port list --tags "$tag" -f value -c ID); do
  delete "port ${port}" openstack port delete "$port"
done
exit 0
"""


def cleanup_script() -> str:
    """The `delete` of the cleanup command (bash), reading OS_CLOUD and INFRA_ID."""
    return CLEANUP_SCRIPT

"""What `pulumi destroy` removes first in integrated mode: what the cluster made in OpenStack itself.

An integrated cluster creates resources Pulumi never registered (the installer's
`destroy cluster` finds them by the infra ID): Octavia load balancers (where the catalog has Octavia) of LoadBalancer
Services (the cloud provider names them `kube_service_<infraID>_<namespace>_<service>`)
with floating IPs on their VIP ports, Cinder volumes of PVCs (Cinder CSI sets the metadata
`cinder.csi.openstack.org/cluster=<infraID>`), servers and ports of user MachineSets
(tagged `openshiftClusterID=<infraID>`; servers also named `<infraID>-...`), server groups
the Machine API made for a `serverGroupName` that did not exist (`<infraID>-<something>`),
and, where the cloud has Swift, the image registry's container `<infraID>-image-registry-<random>`
(UPI's down-containers.yaml deletes the infra ID's containers). Left behind, they block
deleting the subnet and network, or cost storage. And Glance images tagged with the infra ID
(the installer's destroy deletes those too): this program's copy of the bootstrap config is
one, deleted by Pulumi before the script runs (it depends on the command); another is what an
interrupted `pulumi up` uploaded, which no state holds. They hold the cluster's secrets.

Never what Pulumi deletes in the same destroy: this program tags its own servers, ports and
floating IPs with the infra ID and names them `<infraID>-...` too, so the script leaves the
names it gives (`OURS`: bootstrap, bootstrap-helper, api-port, ingress-port, master-N,
worker-N, and the groups master and worker) and touches no floating IP but a load
balancer's (the cluster makes no other). A Machine API machine is named `<MachineSet>-<5
random characters>`, which none of these is.

The script runs as the `delete` of a command that depends on the network, subnet, router,
router interface and security groups, and that the masters, the workers and the bootstrap's
Glance image depend on: the engine runs it after those are gone (no cloud provider or Machine API left
to re-create a load balancer or a machine behind it; PVC volumes detached) and before the
network and groups go. Order: each load balancer's floating IPs, then the load balancer
(cascade: listeners, pools, its VIP port); servers (waiting, so their volumes detach and
their ports go); then volumes, ports, server groups, images and containers. Every step tolerates
things already gone and never fails the destroy: what it cannot delete it names on stderr.
It prints IDs only; the credentials stay in clouds.yaml (OS_CLOUD names the entry).
"""

from __future__ import annotations

# Names of this program's own servers, ports and server groups after `<infraID>-` (ERE).
OURS = r"(bootstrap|bootstrap-helper|api-port|ingress-port|master|worker|(master|worker)-[0-9]+)"

CLEANUP_SCRIPT = r"""set -u
: "${OS_CLOUD:?}" "${INFRA_ID:?}"
tag="openshiftClusterID=${INFRA_ID}"
ours="${INFRA_ID}-OURS"

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

# Rows "ID name": the IDs of those not named as this program names its own (Pulumi deletes those).
not_ours() {
  awk -v ours="$ours" '{ id = $1; sub(/^[^ ]+ ?/, ""); if ($0 !~ ("^" ours "$")) print id }'
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

# The services the token's catalog names: Octavia and Swift are optional.
# (`catalog show` of a missing service exits 0: the catalog's types say it.)
services=$(openstack catalog list -f value -c Type 2>/dev/null || true)
has() { printf '%s\n' "$services" | grep -qx "$1"; }

# Load balancers of LoadBalancer Services, where the cloud has Octavia: first the floating IPs
# on their VIP ports (a deleted port would leave them allocated), then the load balancer and all it holds.
has load-balancer && for lb in $(list openstack loadbalancer list -f value -c id -c name | awk -v prefix="kube_service_${INFRA_ID}_" 'index($2, prefix) == 1 { print $1 }'); do
  port=$(openstack loadbalancer show "$lb" -f value -c vip_port_id 2>/dev/null || true)
  if [ -n "$port" ]; then
    for fip in $(list openstack floating ip list --port "$port" -f value -c ID); do
      delete "floating IP ${fip} of load balancer ${lb}" openstack floating ip delete "$fip"
    done
  fi
  delete "load balancer ${lb}" openstack loadbalancer delete --cascade --wait "$lb"
done

# MachineSets' servers, by tag (Nova filters by tag from compute API 2.26; older clients
# default lower) and by the name prefix the Machine API gives them: waiting, so their
# volumes detach and their ports go.
servers=$(
  list openstack --os-compute-api-version 2.26 server list --tags "$tag" -f value -c ID -c Name
  list openstack server list --name "^${INFRA_ID}-" -f value -c ID -c Name
)
for server in $(printf '%s\n' "$servers" | not_ours | sort -u); do
  delete "server ${server}" openstack server delete --wait "$server"
done

# Volumes of PVCs, now that no server holds them.
# A plain delete: Cinder's default policy keeps force-delete for admins. One still detaching
# gets a second try.
for volume in $(list openstack volume list --property "cinder.csi.openstack.org/cluster=${INFRA_ID}" -f value -c ID); do
  if ! openstack volume delete "$volume" >/dev/null 2>&1; then
    sleep "${CLEANUP_RETRY_SECONDS:-10}"
    delete "volume ${volume}" openstack volume delete "$volume"
  else
    echo "cleanup: deleted volume ${volume}"
  fi
done

# Ports the Machine API made for its servers (tagged; Nova does not delete ports it was given).
for port in $(list openstack port list --tags "$tag" -f value -c ID -c Name | not_ours); do
  delete "port ${port}" openstack port delete "$port"
done

# Server groups the Machine API made by name, now without members.
for group in $(list openstack server group list -f value -c ID -c Name | awk -v prefix="${INFRA_ID}-" 'index($2, prefix) == 1' | not_ours); do
  delete "server group ${group}" openstack server group delete "$group"
done

# Copies of the bootstrap config left in Glance (this program's own is gone by now).
for image in $(list openstack image list --tag "$tag" -f value -c ID); do
  delete "image ${image}" openstack image delete "$image"
done

# The image registry's Swift container, where the cloud has an object store.
if has object-store; then
  for container in $(list openstack container list --prefix "${INFRA_ID}-image-registry-" -f value -c Name); do
    delete "container ${container}" openstack container delete --recursive "$container"
  done
fi
exit 0
""".replace("OURS", OURS)


def cleanup_script() -> str:
    """The `delete` of the cleanup command (bash), reading OS_CLOUD and INFRA_ID."""
    return CLEANUP_SCRIPT

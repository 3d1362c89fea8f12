"""What runs before a worker's server or domain is deleted: `oc adm drain` (`kubectl drain`),
then `oc delete node`. Pure Python.

Removing a worker without draining it ignores PodDisruptionBudgets: its pods simply die. And
without a cloud controller manager (standalone mode and libvirt, platform none) its Node
object stays NotReady for ever; with one (integrated mode) the Node goes with the server,
but the drain still matters. So each worker has a local command whose `delete` is this
script: the engine runs it before deleting the worker's server (the command depends on it),
on a scale-down and on `pulumi destroy`.

It never blocks a destroy: a cluster whose API does not answer (already gone, or not
reachable from where Pulumi runs) or refuses the kubeconfig is said so on stderr, with the
tool's own error, and the server goes anyway; the drain is bounded (`DRAIN_TIMEOUT` seconds,
default 300: a budget that allows no eviction would otherwise hold it for ever; so would a
node whose kubelet is gone, which never confirms its evicted pods' end: they go once the Node
is deleted, by the pod garbage collector) and every call has a timeout of its own. It always
exits 0. Reads NODE (the node's name), OC (`ocp:installer.oc`: oc or kubectl, told apart by
the binary's name as ocp/kube.py does: kubectl has `drain` at the top, oc under `adm`),
KUBECONFIG_DATA (the installer's admin kubeconfig, written to a private temporary file and
removed) and DRAIN_TIMEOUT; prints no secret.
"""

from __future__ import annotations

DRAIN_TIMEOUT_SECONDS = 300

DRAIN_SCRIPT = r"""set -u
: "${NODE:?}" "${OC:?}" "${KUBECONFIG_DATA:?}"
drain_timeout=${DRAIN_TIMEOUT:-DEFAULT_TIMEOUT}
case "${OC##*/}" in
  kubectl*) tool=kubectl drain=(drain) ;;
  *) tool=oc drain=(adm drain) ;;
esac
by_hand="${tool} ${drain[*]} ${NODE} --ignore-daemonsets --delete-emptydir-data --force; ${tool} delete node ${NODE}"

if ! command -v "$OC" >/dev/null 2>&1; then
  echo "drain: no ${OC} here: ${NODE} was not drained; if the cluster lives on: ${by_hand}" >&2
  exit 0
fi

kubeconfig=$(mktemp)
answer=$(mktemp)
trap 'rm -f "$kubeconfig" "$answer"' EXIT
printf '%s\n' "$KUBECONFIG_DATA" >"$kubeconfig"

# oc or kubectl with the cluster's kubeconfig, killed after $1 seconds whatever it waits for.
cluster() {
  local seconds=$1
  shift
  timeout --kill-after=5 "$seconds" "$OC" --kubeconfig "$kubeconfig" --request-timeout=20s "$@"
}

if ! cluster 30 get node "$NODE" -o name >/dev/null 2>"$answer"; then
  # Its error, without the discovery retries it logs first (klog lines: E1125 08:55:35...).
  said=$(sed '/^[IWEF][0-9][0-9][0-9][0-9] /d' "$answer" | tail -n 1 | cut -c1-300)
  said=${said:-no answer within 30 s}
  if grep -q '^Error from server (NotFound)' "$answer"; then
    echo "drain: ${NODE} is not a node of the cluster: nothing to drain"
  elif grep -q '^Error from server\|^error: You must be logged in' "$answer"; then
    echo "drain: the cluster's API answered with an error: ${NODE} was not drained; if the cluster lives on: ${by_hand}" >&2
    echo "drain: ${tool}: ${said}" >&2
  else
    echo "drain: the cluster's API does not answer: ${NODE} was not drained; if the cluster lives on: ${by_hand}" >&2
    echo "drain: ${tool}: ${said}" >&2
  fi
  exit 0
fi

if cluster $((drain_timeout + 30)) "${drain[@]}" "$NODE" --ignore-daemonsets --delete-emptydir-data --force \
  --timeout="${drain_timeout}s" >/dev/null 2>&1; then
  echo "drain: drained ${NODE}"
else
  echo "drain: ${NODE} was not drained within ${drain_timeout}s (a PodDisruptionBudget allowing no eviction?): its pods go with it" >&2
fi

if cluster 60 delete node "$NODE" --wait=false >/dev/null 2>&1; then
  echo "drain: deleted node ${NODE}"
else
  echo "drain: could not delete node ${NODE}: ${tool} delete node ${NODE}" >&2
fi
exit 0
""".replace("DEFAULT_TIMEOUT", str(DRAIN_TIMEOUT_SECONDS))


def drain_script() -> str:
    """The `delete` of a worker's drain command (bash)."""
    return DRAIN_SCRIPT

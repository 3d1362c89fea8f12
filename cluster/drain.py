"""What runs before a worker's server or domain is deleted: `oc adm drain`, then `oc delete node`. Pure Python.

Removing a worker without draining it ignores PodDisruptionBudgets: its pods simply die. And
without a cloud controller manager (standalone mode and libvirt, platform none) its Node
object stays NotReady for ever; with one (integrated mode) the Node goes with the server,
but the drain still matters. So each worker has a local command whose `delete` is this
script: the engine runs it before deleting the worker's server (the command depends on it),
on a scale-down and on `pulumi destroy`.

It never blocks a destroy: a cluster whose API does not answer (already gone, or not
reachable from where Pulumi runs) is said so on stderr and the server goes anyway; the drain
is bounded (`DRAIN_TIMEOUT` seconds, default 300: a budget that allows no eviction would
otherwise hold it for ever) and every call has a timeout of its own. It always exits 0.
Reads NODE (the node's name), OC (the `oc` binary, `ocp:installer.oc`), KUBECONFIG_DATA
(the installer's admin kubeconfig, written to a private temporary file and removed) and
DRAIN_TIMEOUT; prints no secret.
"""

from __future__ import annotations

DRAIN_TIMEOUT_SECONDS = 300

DRAIN_SCRIPT = r"""set -u
: "${NODE:?}" "${OC:?}" "${KUBECONFIG_DATA:?}"
drain_timeout=${DRAIN_TIMEOUT:-DEFAULT_TIMEOUT}
by_hand="oc adm drain ${NODE} --ignore-daemonsets --delete-emptydir-data --force; oc delete node ${NODE}"

if ! command -v "$OC" >/dev/null 2>&1; then
  echo "drain: no ${OC} here: ${NODE} was not drained; if the cluster lives on: ${by_hand}" >&2
  exit 0
fi

kubeconfig=$(mktemp)
answer=$(mktemp)
trap 'rm -f "$kubeconfig" "$answer"' EXIT
printf '%s\n' "$KUBECONFIG_DATA" >"$kubeconfig"

# oc with the cluster's kubeconfig, killed after $1 seconds whatever it waits for.
cluster() {
  local seconds=$1
  shift
  timeout --kill-after=5 "$seconds" "$OC" --kubeconfig "$kubeconfig" --request-timeout=20s "$@"
}

if ! cluster 30 get node "$NODE" -o name >/dev/null 2>"$answer"; then
  if grep -q NotFound "$answer"; then
    echo "drain: ${NODE} is not a node of the cluster: nothing to drain"
  else
    echo "drain: the cluster's API does not answer: ${NODE} was not drained; if the cluster lives on: ${by_hand}" >&2
  fi
  exit 0
fi

if cluster $((drain_timeout + 30)) adm drain "$NODE" --ignore-daemonsets --delete-emptydir-data --force \
  --timeout="${drain_timeout}s" >/dev/null 2>&1; then
  echo "drain: drained ${NODE}"
else
  echo "drain: ${NODE} was not drained within ${drain_timeout}s (a PodDisruptionBudget allowing no eviction?): its pods go with it" >&2
fi

if cluster 60 delete node "$NODE" --wait=false >/dev/null 2>&1; then
  echo "drain: deleted node ${NODE}"
else
  echo "drain: could not delete node ${NODE}: oc delete node ${NODE}" >&2
fi
exit 0
""".replace("DEFAULT_TIMEOUT", str(DRAIN_TIMEOUT_SECONDS))


def drain_script() -> str:
    """The `delete` of a worker's drain command (bash)."""
    return DRAIN_SCRIPT

"""Tags a network the user is given as the cluster's primary network, and takes the tag off again,
as the installer did with a network you bring (`<infraID>-primaryClusterNetwork`). Nothing reads it:
the Machine API finds the machines' network and subnets as their MachineSets name them, and the
4.16+ installer no longer adds the tag (its destroy still removes it, pkg/destroy/openstack
untagPrimaryNetwork); it is kept as the cluster's mark on a network it does not own. Never
anything else: the network is the user's.

`OS_CLOUD=... NETWORK=<ID or name> TAG=... python -m cluster.network_tag add|remove`, as the
network component's command runs it (openstacksdk, in the program's venv). Removing a tag from a
network that is gone, or that no longer has it, is done.
"""

from __future__ import annotations

import os
import sys

# The command's create (add) and delete (remove), run in the project directory as the destroy
# cleanup is: the program's venv, else python3, needs openstacksdk.
_SCRIPT = r"""set -u
: "${OS_CLOUD:?}" "${NETWORK:?}" "${TAG:?}"
for python in venv/bin/python python3; do
  if command -v "$python" >/dev/null 2>&1 && "$python" -c 'import openstack, cluster.network_tag' 2>/dev/null; then
    exec "$python" -m cluster.network_tag ACTION
  fi
done
echo "network_tag: no Python with openstacksdk and this program in $(pwd) (the program's venv/): could not ACTION tag $TAG" >&2
exit STATUS
"""


def tag_script(action: str) -> str:
    """The bash script that adds (`add`) or removes (`remove`) TAG on NETWORK."""
    # A tag left behind harms nothing: a destroy goes on without it.
    return _SCRIPT.replace("ACTION", action).replace("STATUS", "1" if action == "add" else "0")


def primary_tag(infra_id: str) -> str:
    """The installer's tag for the cluster's primary network."""
    return f"{infra_id}-primaryClusterNetwork"


def main(argv: list[str], environ: dict[str, str]) -> int:
    import openstack  # in the program's venv; imported here so that the core's importers need none
    from openstack import exceptions

    action = argv[0] if argv else ""
    if action not in ("add", "remove"):
        print("usage: python -m cluster.network_tag add|remove (OS_CLOUD, NETWORK, TAG in the environment)", file=sys.stderr)
        return 2
    reference, tag = environ["NETWORK"], environ["TAG"]
    conn = openstack.connect(cloud=environ["OS_CLOUD"])
    network = conn.network.find_network(reference, ignore_missing=True)
    if network is None:
        if action == "remove":
            print(f"network_tag: network {reference} is gone: nothing to untag")
            return 0
        print(f"network_tag: network {reference} (ocp:openstack.existingNetwork.networkId) does not exist", file=sys.stderr)
        return 1
    try:
        if action == "add":
            conn.network.add_tag(network, tag)
        elif tag in (network.tags or []):
            conn.network.remove_tag(network, tag)
    except exceptions.ForbiddenException:
        print(
            f"network_tag: {action} tag {tag} on network {network.id} was refused: it marks the cluster's primary "
            "network, as the installer's tag did, and only the network's owner or an admin may tag it. Ask the cloud's "
            "administrator to create the network in your project, or to add that tag",
            file=sys.stderr,
        )
        return 1 if action == "add" else 0
    print(f"network_tag: {'tagged' if action == 'add' else 'untagged'} network {network.id} {tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], dict(os.environ)))

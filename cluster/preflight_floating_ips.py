"""The preflight's check of the floating IPs a stack plans on a network it was given (issue 50, item 6): Neutron
maps one to a port only through a router on the port's subnet, and says so only when the association is made,
halfway through `pulumi up`. Pure Python."""

from __future__ import annotations

from cluster.cloud_facts import CloudFacts
from cluster.config import ClusterConfig
from cluster.config_rules_families import planned_floating_ips


def floating_ips_routed(config: ClusterConfig, facts: CloudFacts) -> tuple[list[str], list[str]]:
    """(problems, warnings): on a network given without a router of ours, a floating IP maps to a port of its
    IPv4 subnet only through a router with an interface on that subnet and its gateway on the floating IP's
    network (Neutron's get_router_for_floatingip, neutron/db/l3_db.py: "External network ... is not reachable
    from subnet ..."), which Neutron says only when the association is made, halfway through `pulumi up`. A
    router of another project's, which Neutron does not show, may be one: a warning. A running cluster keeps
    what it has: a warning too."""
    openstack = config.openstack
    existing = openstack.existing_network if openstack else None
    planned = planned_floating_ips(config) if existing is not None and not existing.router else []
    external = facts.external_network_ids.get(openstack.external_network or "") if openstack else None
    if not planned or external is None or facts.subnets is None or facts.networks is None:
        return [], []  # nothing planned, or what is missing is said elsewhere (externalNetwork, the probe)
    assert existing is not None and openstack is not None
    networks = facts.networks.get(existing.network_id, ())
    problems: list[str] = []
    warnings: list[str] = []
    for family, ref in enumerate(existing.subnet_ids[: len(config.machine_networks)]):
        if config.machine_networks[family].version != 4:  # floating IPs are IPv4
            continue
        found = facts.subnets.get(ref, ())
        if len(networks) == 1 and len(found) > 1:
            found = tuple(each for each in found if each.network == networks[0].id) or found
        if len(found) != 1 or found[0].routers is None:
            continue  # none or several: _existing_network says so; routers not read: nothing to hold
        gateways = dict(found[0].routers)
        if external in gateways.values():
            continue
        keys = ", ".join(planned)
        network = openstack.external_network
        hidden = sorted(router for router, gateway in gateways.items() if gateway is None)
        if hidden:
            warnings.append(
                f'{keys}: subnet "{ref}" has an interface of router {", ".join(hidden)}, which Neutron does not show this project '
                f'(another project\'s): a floating IP on externalNetwork "{network}" maps there only if its gateway is on "{network}"'
            )
            continue
        others = f" (its routers' gateways are elsewhere: {', '.join(sorted(gateways))})" if gateways else ""
        text = (
            f'{keys}: floating IPs on externalNetwork "{network}" reach a port on subnet "{ref}" only through a router with an '
            f'interface on that subnet and its gateway on "{network}", and the subnet has none{others}: Neutron would refuse '
            "each association (\"External network ... is not reachable from subnet ...\") halfway through `pulumi up`"
        )
        fix = (
            "write ocp:openstack.existingNetwork.router: true (this stack then makes one), ask the network's owner to attach a "
            f"router whose gateway is on \"{network}\" (`openstack router add subnet <router> {ref}`), or plan none: "
            "apiFloatingIp: none, ingressFloatingIp: none, bootstrap.helper.floatingIp: false (clients then reach the VIPs on "
            "the network itself)"
        )
        if facts.existing.cluster:
            warnings.append(f"{text}. This cluster keeps the floating IPs it has; to add one, {fix}")
        else:
            problems.append(f"{text}: {fix}")
    return problems, warnings

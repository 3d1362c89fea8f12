"""OpenStackCluster: every OpenStack resource of one cluster, wired in dependency order."""

from __future__ import annotations

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig
from cluster.day2 import installed_plan
from components.installer import Installer
from components.node_configs import NodeConfigs
from components.openstack import preflight
from components.openstack.bootstrap import Bootstrap
from components.openstack.cleanup import Cleanup
from components.openstack.common import ClusterContext
from components.openstack.machines import NodePool, control_plane, workers
from components.openstack.network import Network
from components.openstack.pointers import MasterPointers, WorkerPointers
from components.openstack.security import SecurityGroups
from components.openstack.vips import VipPorts
from components.outputs import ClusterOutputs
from components.worker_images import WorkerImages


class OpenStackCluster(pulumi.ComponentResource):
    outputs: ClusterOutputs

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        plan: AddressPlan,
        installer: Installer,
        runner: command.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:Cluster", name, None, opts)
        assert config.openstack is not None
        providers = [
            openstack.Provider("openstack", cloud=config.openstack.cloud, opts=pulumi.ResourceOptions(parent=self)),
            runner,
        ]
        child = pulumi.ResourceOptions(parent=self, providers=providers)
        # The infra ID names and tags resources; unlike the rest of the installer's output it is no secret.
        # Every cloud resource waits for it, so the preflight's verdict gates them all.
        checked = preflight.check(
            config, plan, providers[0], runner, pulumi.Output.unsecret(installer.assets.apply(lambda assets: assets.infra_id))
        )
        router_names = installer.assets.apply(
            lambda assets: tuple(node.name for node in installed_plan(plan, assets).router_slots)
        )
        cluster = ClusterContext(config, plan, checked.infra_id, router_names, checked)
        nodes = NodeConfigs(installer.assets, config, plan, "served")

        network = Network(f"{name}-network", cluster, child)
        security = SecurityGroups(f"{name}-security", cluster, child)
        vips = VipPorts(f"{name}-vips", cluster, network.subnet, security, child)
        # On destroy, after the nodes and before the network and groups go: what the cluster made itself.
        cleanup = Cleanup(f"{name}-cleanup", cluster, [network, security], child) if config.integrated else None
        gather = None
        # Each node's port's addresses: where Neutron derives a family's, the outputs read it there.
        assigned = {}
        if plan.bootstrap_enabled:
            bootstrap = Bootstrap(
                f"{name}-bootstrap",
                cluster,
                network.subnet,
                security.of(cluster, plan.bootstrap),
                nodes.user_data(plan.bootstrap),
                nodes.served(plan.bootstrap),
                installer.assets,
                nodes.cloud_ca,
                # The destroy cleanup deletes what images of it are left once Pulumi deleted its own.
                [cleanup.command] if cleanup else [],
                child,
            )
            gather, assigned[plan.bootstrap] = bootstrap.gather_command, bootstrap.addresses
        user_data = nodes.user_data_of(plan.nodes)
        if config.integrated:  # nodes made after install boot from the pointer the running cluster trusts
            user_data |= MasterPointers(f"{name}-master-pointers", cluster, plan.masters, installer.assets, child).user_data
            user_data |= WorkerPointers(f"{name}-worker-pointers", cluster, plan.workers, installer.assets, child).user_data
        else:  # new workers run the static pods' images of the release the cluster is at
            user_data |= WorkerImages(f"{name}-worker-images", config, plan, plan.workers, installer.assets, nodes, child).user_data
        # Both roles' sets even at 0 workers: the workers' server group must outlive the count,
        # as the Machine API finds it by name and breaks on two of one name.
        servers_created = {}
        servers: list[pulumi.Resource] = []
        for component, role in ((f"{name}-control-plane", control_plane(cluster)), (f"{name}-workers", workers(cluster))):
            pool = NodePool(
                component,
                role,
                cluster,
                network.subnet,
                {node.name: user_data[node.name] for node in role.nodes},
                child,
                drained_with=installer.assets if role.name == "worker" else None,
                security_groups={node.name: security.of(cluster, node) for node in role.nodes},
                servers_after=[cleanup.command] if cleanup else [],
            )
            servers_created |= {node: server.created for node, server in zip(role.nodes, pool.servers)}
            servers += pool.servers
            assigned |= pool.addresses
        if cleanup:  # on destroy, before any server goes: what serves them gets the cluster's tag
            cleanup.mark_before(servers)
        self.outputs = ClusterOutputs.build(
            config, plan, installer.assets, vips.api_floating_ip, vips.ingress_floating_ip, gather, servers_created, network.mtu,
            assigned=assigned, derived=network.subnet.derived,
        )
        self.register_outputs(self.outputs.as_dict())

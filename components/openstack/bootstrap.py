"""Bootstrap: the helper that serves the bootstrap's full ignition, and the bootstrap node itself.

The full bootstrap config (~300 KB) cannot be user_data (Nova: 64 KiB), and this program
needs neither Swift nor Glance: a small helper VM on the tenant network serves it over HTTP
to the machine network only; `pulumi up` copies it there over SSH (pulumi-command), and the
bootstrap's shim user_data merges it, verified by sha512. Both go when bootstrap.enabled is false.
"""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack
import yaml

from cluster.firewall import helper_rules
from components.openstack.common import ClusterContext, Subnet
from components.openstack.machines import node_port, server
from components.openstack.security import security_group
from ignition import assembly
from ignition.render import render

SERVE_DIRECTORY = "/srv/ignition"
# Written under a temporary name and renamed: the bootstrap never fetches half a file.
UPLOAD = (
    f"sudo install -d -m 0755 {SERVE_DIRECTORY} && "
    f"sudo tee {SERVE_DIRECTORY}/.bootstrap.ign.part >/dev/null && "
    f"sudo chmod 0644 {SERVE_DIRECTORY}/.bootstrap.ign.part && "
    f"sudo mv {SERVE_DIRECTORY}/.bootstrap.ign.part {SERVE_DIRECTORY}/bootstrap.ign"
)


def helper_cloud_config(ssh_key: str, port: int) -> str:
    document = {
        "ssh_authorized_keys": [ssh_key],
        "write_files": [
            {
                "path": "/etc/systemd/system/bootstrap-ignition.service",
                "content": render("bootstrap-helper.service.j2", directory=SERVE_DIRECTORY, port=port),
            }
        ],
        "runcmd": [
            ["install", "-d", "-m", "0755", SERVE_DIRECTORY],
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "bootstrap-ignition.service"],
        ],
    }
    return "#cloud-config\n" + yaml.safe_dump(document, sort_keys=True)


class BootstrapHelper(pulumi.ComponentResource):
    upload: command.remote.Command

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        served_config: pulumi.Output[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:BootstrapHelper", name, None, opts)
        config, plan = cluster.config, cluster.plan
        helper = config.bootstrap.helper
        assert config.openstack is not None
        child = pulumi.ResourceOptions(parent=self)
        group = security_group(
            name, cluster, "helper", helper_rules(config.machine_network, config.ssh_allowed_cidr, helper.port), self
        )
        port = openstack.networking.Port(
            f"{name}-port",
            name=cluster.named("bootstrap-helper"),
            network_id=subnet.network_id,
            fixed_ips=[openstack.networking.PortFixedIpArgs(subnet_id=subnet.subnet_id, ip_address=str(plan.helper_ip))],
            security_group_ids=[group.id],
            tags=cluster.tags,
            opts=child,
        )
        instance = openstack.compute.Instance(
            f"{name}-server",
            name=f"{config.cluster_name}-bootstrap-helper",
            flavor_name=helper.flavor,
            image_name=helper.image,
            networks=[openstack.compute.InstanceNetworkArgs(port=port.id)],
            user_data=helper_cloud_config(config.ssh_key, helper.port),
            tags=cluster.tags,
            opts=child,
        )
        ssh_host: pulumi.Input[str] = str(plan.helper_ip)
        if helper.floating_ip:
            floating_ip = openstack.networking.FloatingIp(
                f"{name}-fip",
                pool=config.openstack.external_network,
                port_id=port.id,
                tags=cluster.tags,
                opts=child,
            )
            ssh_host = floating_ip.address
        key_file = helper.ssh_private_key_file
        self.upload = command.remote.Command(
            f"{name}-upload",
            connection=command.remote.ConnectionArgs(
                host=ssh_host,
                user=helper.ssh_user,
                # Without a key file, the SSH agent of whoever runs `pulumi up` (SSH_AUTH_SOCK).
                private_key=pulumi.Output.secret(Path(key_file).expanduser().read_text()) if key_file else None,
                # The helper boots and runs cloud-init first: keep dialling for up to ~10 minutes.
                dial_error_limit=40,
                per_dial_timeout=15,
            ),
            create=UPLOAD,
            stdin=served_config,
            triggers=[served_config.apply(assembly.sha512_tag)],
            logging=command.remote.Logging.STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[instance]),
        )
        self.register_outputs({"url": f"http://{plan.helper_ip}:{helper.port}/bootstrap.ign"})


class Bootstrap(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        security_group_id: pulumi.Input[str],
        user_data: pulumi.Output[str],
        served_config: pulumi.Output[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:Bootstrap", name, None, opts)
        config, plan = cluster.config, cluster.plan
        node = plan.bootstrap
        helper = BootstrapHelper(f"{name}-helper", cluster, subnet, served_config, pulumi.ResourceOptions(parent=self))
        port = node_port(f"{name}-node", cluster, node, subnet, security_group_id, (plan.api_vip,), self)
        role = config.masters.model_copy(
            update={
                "flavor": config.bootstrap.flavor or config.masters.flavor,
                "image": config.bootstrap.image or config.masters.image,
            }
        )
        # The bootstrap may only boot once its config is in place on the helper.
        server(f"{name}-node", cluster, node, role, port, user_data, None, pulumi.ResourceOptions(parent=self, depends_on=[helper.upload]))
        self.register_outputs({})

"""Bootstrap: where the bootstrap's full ignition is served from, and the bootstrap node itself.

The full bootstrap config (~300 KB) cannot be user_data (Nova: 64 KiB). With
bootstrap.configSource glance (the default), as the installer does, it is a private Glance image
`<infraID>-ignition`, and the bootstrap's shim merges the image's data with a Keystone token (the
provider's own, a secret) in X-Auth-Token: no extra VM, no SSH from where `pulumi up` runs. With
helper, a small helper VM on the tenant network serves it over HTTP
to the bootstrap's address alone, at a path derived from the cluster's secret, and nothing
else; `pulumi up` copies it there over SSH (pulumi-command) from `openstack.sshAllowedCidr`,
and the bootstrap's shim user_data merges it. Either way verified by sha512. For diagnosis the bootstrap
admits SSH from there too (and has a floating IP when the helper has one): the `bootstrapGather`
output runs `openshift-install gather bootstrap`. All of it goes when bootstrap.enabled is
false, and the copy of the config with it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack
import yaml

from cluster.firewall import bootstrap_rules, helper_rules
from cluster.installer import InstallerAssets, gather_bootstrap_command, installer_dir
from components.openstack.common import ClusterContext, Subnet
from components.openstack.machines import node_port, server
from components.openstack.security import security_group
from ignition import assembly
from ignition.nodes import bootstrap_helper_url, glance_file_url, glance_shim
from ignition.render import render

SERVE_DIRECTORY = "/srv/ignition"
SERVED_FILE = f"{SERVE_DIRECTORY}/bootstrap.ign"
# The one URL path the server answers; written by the upload, so user_data holds no secret.
PATH_FILE = f"{SERVE_DIRECTORY}/url-path"
SERVER = "/usr/local/libexec/bootstrap-ignition-server"


def upload_command(url: str) -> str:
    """Copy stdin into place, then name the path it is served at. Each file is written under a
    temporary name and renamed: the bootstrap never fetches half a file."""
    steps = [f"sudo install -d -m 0755 {SERVE_DIRECTORY}"]
    for source, target in (("", SERVED_FILE), (f"printf '%s\\n' {shlex.quote(urlsplit(url).path)} | ", PATH_FILE)):
        part = f"{target}.part"
        steps += [f"{source}sudo tee {part} >/dev/null", f"sudo chmod 0644 {part}", f"sudo mv {part} {target}"]
    return "set -eu; " + " && ".join(steps)


def helper_cloud_config(ssh_keys: str, port: int) -> str:
    unit = render("bootstrap-helper.service.j2", server=SERVER, port=port, file=SERVED_FILE, path_file=PATH_FILE)
    document = {
        "ssh_authorized_keys": ssh_keys.splitlines(),
        "write_files": [
            {"path": SERVER, "permissions": "0755", "content": render("bootstrap-helper-server.py.j2")},
            {"path": "/etc/systemd/system/bootstrap-ignition.service", "content": unit},
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
        url: pulumi.Output[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:BootstrapHelper", name, None, opts)
        config, plan = cluster.config, cluster.plan
        helper = config.bootstrap.helper
        child = pulumi.ResourceOptions(parent=self)
        group = security_group(name, cluster, "helper", helper_rules(config, plan), self)
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
            name=cluster.named("bootstrap-helper"),  # unique in the project, as the nodes' names
            flavor_name=helper.flavor,
            image_name=helper.image,
            networks=[openstack.compute.InstanceNetworkArgs(port=port.id)],
            user_data=helper_cloud_config(config.ssh_key, helper.port),
            config_drive=True,  # cloud-init reads its user_data without a metadata service, as the nodes do
            tags=cluster.tags,
            # Set up once, at first boot: a running helper keeps what it was created with.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["userData", "imageName", "flavorName", "configDrive"]),
        )
        ssh_host: pulumi.Input[str] = str(plan.helper_ip)
        if helper.floating_ip:
            floating_ip = openstack.networking.FloatingIp(
                f"{name}-fip",
                pool=cluster.openstack.external_network,
                port_id=port.id,
                tags=cluster.tags,
                opts=subnet.floating_ip_options(self),
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
            # It names the secret path.
            create=pulumi.Output.secret(url.apply(upload_command)),
            stdin=served_config,
            triggers=[served_config.apply(assembly.sha512_tag)],
            logging=command.remote.Logging.STDERR,
            # Uploaded once: the bootstrap verifies what it fetched against the hash in its own
            # user_data, which never changes after it is created (machines.FIRST_BOOT_ONLY).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[instance], ignore_changes=["create", "stdin", "triggers"]),
        )
        self.register_outputs({"url": url})


# Written from the command's stdin, read by the Image's upload: the installer's directory already
# holds bootstrap.ign, with the same secrets.
WRITE_FILE = 'umask 077 && mkdir -p "$(dirname "$FILE")" && cat > "$FILE.part" && mv "$FILE.part" "$FILE"'


class BootstrapImage(pulumi.ComponentResource):
    """The bootstrap's full config as a private Glance image, and the shim that fetches it."""

    user_data: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        served_config: pulumi.Output[str],
        assets: pulumi.Output[InstallerAssets],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:BootstrapImage", name, None, opts)
        config = cluster.config
        directory = Path(config.installer.assets_dir or installer_dir(config, pulumi.get_stack())).resolve()
        path = str(directory / "bootstrap-glance.ign")
        written = command.local.Command(
            f"{name}-file",
            create=WRITE_FILE,
            delete='rm -f "$FILE"',
            environment={"FILE": path},
            stdin=served_config,
            logging=command.local.Logging.STDERR,
            # Uploaded once, as the helper's copy: the bootstrap verifies what it fetches by sha512.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["create", "delete", "environment", "stdin"]),
        )
        image = openstack.images.Image(
            f"{name}-image",
            name=cluster.named("ignition"),
            container_format="bare",
            disk_format="raw",
            visibility="private",
            local_file_path=path,
            tags=cluster.tags,
            # The path is this machine's; another checkout of the same stack must not re-upload.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[written], ignore_changes=["localFilePath"]),
        )
        # The provider's token and catalog: a token valid for Keystone's token lifetime (1 h by default).
        scope = openstack.identity.get_auth_scope_output(
            name=cluster.named("bootstrap"), set_token_id=True, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        endpoint = scope.service_catalogs.apply(_public_image_endpoint)
        token = pulumi.Output.secret(scope.token_id)
        node = cluster.plan.bootstrap
        self.user_data = pulumi.Output.secret(
            pulumi.Output.all(served_config, assets, endpoint, image.id, token).apply(
                lambda values: glance_shim(config, node, values[1], values[0], glance_file_url(values[2], values[3]), values[4])
            )
        )
        self.image = image
        self.register_outputs({"imageId": image.id})


def _public_image_endpoint(catalog: Sequence[openstack.identity.outputs.GetAuthScopeServiceCatalogResult]) -> str:
    for service in catalog:
        if service.type == "image":
            for endpoint in service.endpoints:
                if endpoint.interface == "public":
                    return endpoint.url
    raise pulumi.RunError(
        "ocp:bootstrap.configSource: glance, but the cloud's catalog has no public image endpoint: "
        "write configSource: helper (a helper VM serves the bootstrap's config)"
    )


class Bootstrap(pulumi.ComponentResource):
    # `openshift-install gather bootstrap`, ready to run where `pulumi up` runs.
    gather_command: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        security_group_ids: pulumi.Input[Sequence[str]],
        user_data: pulumi.Output[str],
        served_config: pulumi.Output[str],
        assets: pulumi.Output[InstallerAssets],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:Bootstrap", name, None, opts)
        config, plan = cluster.config, cluster.plan
        node = plan.bootstrap
        source: pulumi.Resource
        if config.uses_helper:
            # The same function builds the shim's merge source (ignition.nodes): one URL.
            url = pulumi.Output.secret(
                assets.apply(lambda assets: bootstrap_helper_url(plan, config.bootstrap.helper.port, assets.identity))
            )
            source = BootstrapHelper(f"{name}-helper", cluster, subnet, served_config, url, pulumi.ResourceOptions(parent=self)).upload
        else:
            image = BootstrapImage(f"{name}-config", cluster, served_config, assets, pulumi.ResourceOptions(parent=self))
            user_data, source = image.user_data, image.image
        # SSH for `openshift-install gather bootstrap` from where `pulumi up` runs, to the bootstrap
        # alone (UPI: a floating IP on the bootstrap port); both go with the bootstrap.
        rules = bootstrap_rules(config)
        if rules:
            ssh_group = security_group(name, cluster, "bootstrap", rules, self)
            security_group_ids = pulumi.Output.all(security_group_ids, ssh_group.id).apply(lambda ids: [*ids[0], ids[1]])
        port = node_port(f"{name}-node", cluster, node, subnet, security_group_ids, (plan.api_vip,), self)
        ssh_host: pulumi.Input[str] = str(node.ip)
        if config.bootstrap.helper.floating_ip:  # `pulumi up` runs outside the machine network
            ssh_host = openstack.networking.FloatingIp(
                f"{name}-fip",
                pool=cluster.openstack.external_network,
                port_id=port.id,
                description=cluster.server_name(node),
                tags=cluster.tags,
                opts=subnet.floating_ip_options(self),
            ).address
        self.gather_command = pulumi.Output.from_input(ssh_host).apply(
            lambda host: gather_bootstrap_command(config, plan, pulumi.get_stack(), host)
        )
        role = config.masters.model_copy(
            update={
                "flavor": config.bootstrap.flavor or config.masters.flavor,
                "image": config.bootstrap_image,
                "resize": (),
            }
        )
        # The bootstrap may only boot once its config is in place.
        server(f"{name}-node", cluster, node, role, port, user_data, None, pulumi.ResourceOptions(parent=self, depends_on=[source]))
        self.register_outputs({"gatherCommand": self.gather_command})

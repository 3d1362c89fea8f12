"""Bootstrap: where the bootstrap's full ignition is served from, and the bootstrap node itself.

The full bootstrap config (~300 KB) cannot be user_data (Nova: 64 KiB), so the bootstrap boots
from a small shim that merges it, verified by sha512 (ocp:bootstrap.configSource):

- glance (the default), as the installer does: the config is a private Glance image
  `<infraID>-ignition`, tagged with the infra ID, and the shim fetches the image's data from the
  catalog's public image endpoint (https, unless bootstrap.allowHttpImageEndpoint) with a Keystone
  token in X-Auth-Token (a secret), trusting the cloud's CA. No extra VM, no SSH from where `pulumi
  up` runs. The token is one of an application credential that may only read that image's file
  (bootstrap_credential.py), or the user's own where the cloud cannot; it expires with Keystone's
  token lifetime (1 h by default): the bootstrap fetches at first boot.
- helper, for clouds whose image endpoint the machines cannot reach: a small helper VM on the
  tenant network serves it over HTTPS to the bootstrap's address alone, at a path derived from
  the cluster's secret, and nothing else; the shim trusts the helper's own CA alone
  (cluster.helper_tls). `pulumi up` copies it there with `ssh` from `openstack.sshAllowedCidr`,
  to the host key the helper was given at boot and no other (cluster.helper_ssh; ECDSA with
  ocp:fips).

For diagnosis the bootstrap admits SSH from there too (and has a floating IP when
bootstrap.helper.floatingIp says `pulumi up` runs outside the machine network): the
`bootstrapGather` output runs `openshift-install gather bootstrap`. All of it goes when
bootstrap.enabled is false, and the copy of the config with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack
import yaml

from cluster.addresses import Node
from cluster.config import ClusterConfig
from cluster.firewall import bootstrap_rules, helper_rules
from cluster.gather import gather_bootstrap_command
from cluster.helper_ssh import PATH_FILE, SERVE_DIRECTORY, SERVED_FILE, HostKey, helper_host_key, upload_command, upload_environment, upload_script
from cluster.helper_tls import HelperTls
from cluster.installer import CONFIG_FILE, REMOVE_FILE, WRITE_FILE, InstallerAssets, installer_dir
from cluster.preflight import plain_http_image_endpoint, public_endpoint
from components.openstack.bootstrap_credential import bootstrap_token
from components.openstack.common import ClusterContext, Subnet
from components.openstack.machines import node_port, server
from components.openstack.preflight import catalog_of
from components.openstack.security import security_group
from components.openstack.vips import on_nodes as vips_on_nodes
from ignition import assembly
from ignition.nodes import bootstrap_helper_tls, bootstrap_helper_url, glance_file_url, glance_shim
from ignition.render import render

SERVER = "/usr/local/libexec/bootstrap-ignition-server"
# Root's alone; the service reads them through systemd's LoadCredential=.
TLS_DIRECTORY = "/etc/bootstrap-ignition"
TLS_CERTIFICATE, TLS_KEY = f"{TLS_DIRECTORY}/tls.crt", f"{TLS_DIRECTORY}/tls.key"


def helper_cloud_config(ssh_keys: str, port: int, host_key: HostKey, tls: HelperTls) -> str:
    unit = render(
        "bootstrap-helper.service.j2", server=SERVER, port=port, file=SERVED_FILE, path_file=PATH_FILE,
        certificate=TLS_CERTIFICATE, key=TLS_KEY,
    )
    document: dict[str, Any] = {
        "ssh_authorized_keys": ssh_keys.splitlines(),
        # Its one host key, pinned in the upload (cloud-init deletes the image's keys first).
        "ssh_keys": {f"{host_key.kind}_private": host_key.private, f"{host_key.kind}_public": host_key.public},
        "write_files": [
            {"path": SERVER, "permissions": "0755", "content": render("bootstrap-helper-server.py.j2")},
            {"path": "/etc/systemd/system/bootstrap-ignition.service", "content": unit},
            {"path": TLS_CERTIFICATE, "permissions": "0644", "content": tls.certificate},
            {"path": TLS_KEY, "permissions": "0600", "content": tls.key},
        ],
        "runcmd": [
            ["install", "-d", "-m", "0755", SERVE_DIRECTORY],
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "bootstrap-ignition.service"],
        ],
    }
    return "#cloud-config\n" + yaml.safe_dump(document, sort_keys=True)


class BootstrapHelper(pulumi.ComponentResource):
    upload: command.local.Command

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        served_config: pulumi.Output[str],
        url: pulumi.Output[str],
        host_key: pulumi.Output[HostKey],
        tls: pulumi.Output[HelperTls],
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
            fixed_ips=subnet.fixed_ips(plan.helper_ips),
            security_group_ids=[group.id],
            tags=cluster.tags,
            opts=child,
        )
        instance = openstack.compute.Instance(
            f"{name}-server",
            name=cluster.named("bootstrap-helper"),  # unique in the project, as the nodes' names
            flavor_name=helper.flavor,
            image_id=cluster.image_id(helper.image, self),
            networks=[openstack.compute.InstanceNetworkArgs(port=port.id)],
            # A secret: it holds the helper's private host key and TLS key.
            user_data=pulumi.Output.secret(
                pulumi.Output.all(host_key, tls).apply(lambda values: helper_cloud_config(config.ssh_key, helper.port, *values))
            ),
            config_drive=True,  # cloud-init reads its user_data without a metadata service, as the nodes do
            tags=cluster.tags,
            # Set up once, at first boot: a running helper keeps what it was created with.
            # Its port is made beforehand: a replacement deletes first (see machines.server).
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=["userData", "imageName", "imageId", "flavorName", "configDrive"], delete_before_replace=True
            ),
        )
        ssh_host: pulumi.Input[str] = str(plan.helper_ip)
        if config.bootstrap_floating_ip:
            floating_ip = openstack.networking.FloatingIp(
                f"{name}-fip",
                pool=cluster.openstack.external_network,
                port_id=port.id,
                tags=cluster.tags,
                opts=subnet.floating_ip_options(self),
            )
            ssh_host = floating_ip.address
        # A local `ssh` as the user's own: their SSH agent, or the key file it reads by path
        # (sshPrivateKeyFile): no private key of theirs in the state. The pin is public.
        environment = pulumi.Output.all(ssh_host, pulumi.Output.unsecret(host_key.apply(lambda key: key.public))).apply(
            lambda values: upload_environment(values[0], helper.ssh_user, values[1], helper.ssh_private_key_file)
        )
        self.upload = command.local.Command(
            f"{name}-ssh-upload",
            # It names the secret path.
            create=pulumi.Output.secret(
                pulumi.Output.all(url, host_key).apply(lambda values: upload_script(upload_command(values[0]), values[1].algorithm))
            ),
            environment=environment,
            stdin=served_config,
            triggers=[served_config.apply(assembly.sha512_tag)],
            logging=command.local.Logging.STDERR,
            # Uploaded once: the bootstrap verifies what it fetched against the hash in its own
            # user_data, which never changes after it is created (machines.FIRST_BOOT_ONLY). Its
            # environment too: a helper keeps the host key it booted with, so a pin that changed
            # (a FIPS stack's ed25519 before its ECDSA key) must not send the upload again.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[instance], ignore_changes=["create", "environment", "stdin", "triggers"]
            ),
        )
        self.register_outputs({"url": url})


class BootstrapImage(pulumi.ComponentResource):
    """The bootstrap's full config as a private Glance image, and the shim that fetches it with
    a Keystone token (components/openstack/bootstrap_credential.py)."""

    user_data: pulumi.Output[str]
    image: openstack.images.Image

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        served_config: pulumi.Output[str],
        assets: pulumi.Output[InstallerAssets],
        cloud_ca: str | None,
        after: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:BootstrapImage", name, None, opts)
        config, node = cluster.config, cluster.plan.bootstrap
        directory = Path(config.installer.assets_dir or installer_dir(config, pulumi.get_stack())).resolve()
        path = str(directory / CONFIG_FILE)
        written = command.local.Command(
            f"{name}-file",
            create=WRITE_FILE,
            delete=REMOVE_FILE,
            environment={"FILE": path},
            stdin=served_config,
            logging=command.local.Logging.STDERR,
            # Written once, for the upload: the bootstrap verifies what it fetches by sha512.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["create", "delete", "environment", "stdin"]),
        )
        self.image = openstack.images.Image(
            f"{name}-image",
            name=cluster.named("ignition"),
            container_format="bare",
            disk_format="raw",
            visibility="private",
            local_file_path=path,
            tags=cluster.tags,
            # Uploaded once. Both paths are this machine's (the provider defaults the cache's to
            # $HOME): another checkout or user must not upload it again.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[written, *after], ignore_changes=["localFilePath", "imageCachePath"]
            ),
        )
        # The catalog of the provider's token (and the token itself with bootstrap.credential:
        # userToken). A token, valid for Keystone's token lifetime (1 h by default), is made on every
        # run, which changes nothing, as the server's userData is read at first boot only
        # (machines.FIRST_BOOT_ONLY); a new bootstrap gets the current one.
        scope = openstack.identity.get_auth_scope_output(
            name=cluster.named("bootstrap-config"), set_token_id=True, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        endpoint = pulumi.Output.all(scope.service_catalogs, scope.region).apply(lambda found: _image_endpoint(config, *found))
        file_url = pulumi.Output.all(endpoint, self.image.id).apply(lambda values: glance_file_url(*values))
        token = bootstrap_token(name, cluster, self.image, file_url, scope, assets, cloud_ca, self)
        self.user_data = pulumi.Output.secret(
            pulumi.Output.all(served_config, cluster.infra_id, file_url, token).apply(
                lambda values: _shim(config, node, values[1], values[0], values[2], values[3], cloud_ca)
            )
        )
        self.register_outputs({"imageId": self.image.id})


def _image_endpoint(config: ClusterConfig, services: object, region: str | None) -> str:
    url = public_endpoint(catalog_of(services), "image", region or "")
    if url is None:  # the preflight says so first, unless skipped
        where = f' in region "{region}"' if region else ""
        raise pulumi.RunError(
            f"ocp:bootstrap.configSource: glance, but the service catalog has no public image endpoint{where}, where the "
            "bootstrap would fetch its config: write configSource: helper (a helper VM on the machine network serves it)"
        )
    refusal = plain_http_image_endpoint(config, url)  # the preflight's too
    if refusal:
        raise pulumi.RunError(refusal)
    return url


def _shim(config: ClusterConfig, node: Node, infra_id: str, served: str, source: str, token: str, cloud_ca: str | None) -> str:
    try:
        return glance_shim(config, node, infra_id, served, source, token, cloud_ca)
    except ValueError as error:  # a token beyond the budget the preflight allowed for
        raise pulumi.RunError(str(error)) from None


class Bootstrap(pulumi.ComponentResource):
    # `openshift-install gather bootstrap`, ready to run where `pulumi up` runs.
    gather_command: pulumi.Output[str]
    # Its port's addresses, as Neutron assigned them.
    addresses: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        security_group_ids: pulumi.Input[Sequence[str]],
        user_data: pulumi.Output[str],
        served_config: pulumi.Output[str],
        assets: pulumi.Output[InstallerAssets],
        cloud_ca: str | None,
        image_after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`user_data`: the helper's shim (ignition.nodes); with Glance the shim is made here.
        `image_after`: what the Glance image waits for, and is deleted before (the destroy cleanup)."""
        super().__init__("ocp:openstack:Bootstrap", name, None, opts)
        config, plan = cluster.config, cluster.plan
        node = plan.bootstrap
        source: pulumi.Resource
        if config.uses_helper:
            # The same function builds the shim's merge source (ignition.nodes): one URL.
            url = pulumi.Output.secret(
                assets.apply(lambda assets: bootstrap_helper_url(plan, config.bootstrap.helper.port, assets.identity))
            )
            host_key = pulumi.Output.secret(assets.apply(lambda assets: helper_host_key(assets.identity, config.fips)))
            # The CA's key stays inside this call: only the helper's certificate and key go on.
            tls = pulumi.Output.secret(assets.apply(lambda assets: bootstrap_helper_tls(plan, assets)))
            source = BootstrapHelper(
                f"{name}-helper", cluster, subnet, served_config, url, host_key, tls, pulumi.ResourceOptions(parent=self)
            ).upload
        else:
            image = BootstrapImage(
                f"{name}-config", cluster, served_config, assets, cloud_ca, image_after, pulumi.ResourceOptions(parent=self)
            )
            user_data, source = image.user_data, image.image
        # SSH for `openshift-install gather bootstrap` from where `pulumi up` runs, to the bootstrap
        # alone (UPI: a floating IP on the bootstrap port); both go with the bootstrap.
        rules = bootstrap_rules(config)
        if rules:
            ssh_group = security_group(name, cluster, "bootstrap", rules, self)
            security_group_ids = pulumi.Output.all(security_group_ids, ssh_group.id).apply(lambda ids: [*ids[0], ids[1]])
        port = node_port(f"{name}-node", cluster, node, subnet, security_group_ids, vips_on_nodes(cluster, *plan.api_vips), self, of_the_cluster=False)
        self.addresses = port.all_fixed_ips
        ssh_host: pulumi.Input[str] = str(node.ip)
        if config.bootstrap_floating_ip:  # `pulumi up` runs outside the machine network
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
                # Its etcd is temporary, and its flavor may have no ephemeral disk: no MachineConfig mounts one there.
                "etcd_disk": None,
            }
        )
        # The bootstrap may only boot once its config is in place. It joins no extra network: it serves the
        # machine config server on its every address, and needs nothing the extra networks carry.
        server(f"{name}-node", cluster, node, role, port, user_data, None, pulumi.ResourceOptions(parent=self, depends_on=[source]))
        self.register_outputs({"gatherCommand": self.gather_command})

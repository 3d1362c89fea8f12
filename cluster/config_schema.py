"""The stack file's sections as frozen models: what each key may hold and its default.

Pure Python (pydantic v2), no Pulumi. Single values are checked by their types
(cluster/config_fields.py); the rules that read several keys are in cluster/config_rules.py and
run once the whole config is read.
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from cluster.config_base import Model
from cluster.config_fields import (
    DnsLabel,
    DnsName,
    DomainType,
    MachineNetworks,
    Nameservers,
    NonEmpty,
    NoProxy,
    NtpServers,
    OpenStackId,
    PemBundle,
    ProxyUrl,
    PullSecret,
    ServiceNetworks,
    SshPublicKeys,
    Tags,
    Vips,
    distinct,
)
from cluster.config_networks import AddressFamilies, ClusterNetwork, ClusterNetworks
from cluster.config_openstack import OpenStack
from cluster.config_rules import cross_key_problems
from cluster.networking import NetworkingSettings

DEFAULT_OPENSTACK_IMAGE = "rhcos"
ServerGroupPolicy = Literal["soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity"]


class RootVolume(Model):
    """Boot from a Cinder volume instead of the flavor's disk; deleted with the server."""

    size: Annotated[int, Field(ge=25, le=16384, description="GiB; RHCOS needs at least 25")]
    type: NonEmpty | None = None
    # One type per compute zone, as upstream pairs rootVolume.types[i] with zone i (one: every zone).
    types: tuple[NonEmpty, ...] = ()
    # Cinder zones, round-robin like the servers' zones. Nova cannot place a volume it makes
    # from an image, so with zones the program makes each root volume itself.
    availability_zones: tuple[NonEmpty, ...] = ()


class RoleBase(Model):
    """What masters and workers share. OpenStack keys and libvirt keys are each rejected on the other platform."""

    # OpenStack
    flavor: NonEmpty | None = None
    image: NonEmpty | None = None
    # More security groups on this pool's nodes only (the installer's per-pool additionalSecurityGroupIDs).
    additional_security_group_ids: Annotated[tuple[OpenStackId, ...], AfterValidator(distinct)] = ()
    root_volume: RootVolume | None = None
    availability_zones: tuple[NonEmpty, ...] = ()
    server_group_policy: ServerGroupPolicy = "soft-anti-affinity"
    # OpenStack: one server group per compute zone (<infraID>-<role>-<zone>), as upstream makes the
    # workers'; off, one group across the zones (what stacks made before the key have).
    server_group_per_zone: bool = False
    # Indexes of existing nodes whose size follows flavor (OpenStack: resize, one reboot) or
    # vcpus/memoryMib (libvirt: the domain restarts); every other node keeps the size it has.
    resize: tuple[Annotated[int, Field(ge=0, le=499)], ...] = ()
    # libvirt
    vcpus: Annotated[int, Field(ge=1, le=256)] | None = None
    memory_mib: Annotated[int, Field(ge=2048, le=1048576)] | None = None
    disk_gib: Annotated[int, Field(ge=25, le=16384)] | None = None

    @property
    def openstack_image(self) -> str:
        """The Glance image this role's servers boot."""
        return self.image or DEFAULT_OPENSTACK_IMAGE

    def zone_of(self, index: int) -> int | None:
        """Which of availabilityZones the node in slot `index` is in (round-robin); None: no zones."""
        return index % len(self.availability_zones) if self.availability_zones else None

    def volume_type_of(self, index: int) -> str | None:
        """The root volume type of the node in slot `index`: types[its zone's place] (one type: all), or type."""
        root = self.root_volume
        if root is None or not root.types:
            return root.type if root else None
        return root.types[index % len(root.types)]

    @property
    def groups_per_zone(self) -> bool:
        return self.server_group_per_zone and bool(self.availability_zones)

    def _group_size(self) -> int | None:
        return None

    def server_group(self, index: int) -> str:
        """The server group of the node in slot `index`, by what follows `<infraID>-<role>` in its name:
        "" (the installer's one group), "-1", ... (workers.serverGroupSize), or per zone "-<zone>",
        "-<zone>-1", ... (a zone's slots fill its groups as the slots fill one group without zones)."""
        size, zone = self._group_size(), self.zone_of(index)
        if self.groups_per_zone and zone is not None:
            place = index // len(self.availability_zones)
            number = place // size if size else 0
            return f"-{self.availability_zones[zone]}" + (f"-{number}" if number else "")
        number = index // size if size else 0
        return f"-{number}" if number else ""

    def server_groups(self, count: int) -> dict[str, int]:
        """Members of each server group with `count` nodes, in the order they fill. The first group (each
        zone's first, per zone) always exists: the Machine API's MachineSets find it by name."""
        zones = self.availability_zones if self.groups_per_zone else ()
        groups = {f"-{zone}": 0 for zone in zones} or {"": 0}
        for index in range(count):
            group = self.server_group(index)
            groups[group] = groups.get(group, 0) + 1
        return groups

    def server_group_members(self, count: int) -> tuple[int, ...]:
        """Members of each server group with `count` nodes, in server_groups' order."""
        return tuple(self.server_groups(count).values())

    def libvirt_size(self) -> tuple[int, int, int]:
        """libvirt: (vCPUs, memory MiB, disk GiB) of one domain, the stack's values or the role's defaults."""
        vcpus, memory_mib, disk_gib = self._libvirt_defaults()
        return self.vcpus or vcpus, self.memory_mib or memory_mib, self.disk_gib or disk_gib

    def _libvirt_defaults(self) -> tuple[int, int, int]:
        return 2, 8192, 120  # a worker: OpenShift's minimum is 2 vCPUs and 8 GiB


class EtcdDisk(Model):
    """/var/lib/etcd on the flavor's ephemeral disk, the root on a volume, at install (openshift-docs' "rootVolume
    and etcd on local disk", 4.13+; the MachineConfig in ignition/etcd_disk.py): at least 10 GiB, at most the flavor's."""

    size: Annotated[int, Field(ge=10, le=16384, description="GiB, at least 10 and at most the flavor's ephemeral disk")] = 10


class Masters(RoleBase):
    count: Literal[1, 3, 5] = 3
    etcd_disk: EtcdDisk | None = None

    @field_validator("resize")
    @classmethod
    def _one_master_at_a_time(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if len(value) > 1:
            raise ValueError(
                "resize one master at a time, so etcd keeps its quorum: list one index, e.g. resize: [0], "
                "wait for that master to be Ready, then the next"
            )
        return value

    def _libvirt_defaults(self) -> tuple[int, int, int]:
        return 4, 16384, 120  # OpenShift's minimum for a control plane node (and the bootstrap)


class Workers(RoleBase):
    count: Annotated[int, Field(ge=0, le=500)] = 2
    # Addresses (and DNS names, VRRP peers) are reserved for this many workers up front, so
    # scaling within it changes nothing on any existing node. Each slot adds ~90 bytes to every
    # node's user_data (CoreDNS hosts); 500 keeps masters inside the 24 KiB budget (ignition/nodes.py).
    max_count: Annotated[int, Field(ge=1, le=500)] = 100
    # OpenStack: at most this many workers per server group (Nova's server_group_members quota
    # is 10 by default). Worker N goes into group N // this: <infraID>-worker, then -worker-1, ...
    # Unset: one group, as the installer makes it.
    server_group_size: Annotated[int, Field(ge=1, le=500)] | None = None
    # Minutes `ocp install` waits for the workers to be Ready (--nodes-timeout overrides it): bare metal needs more.
    ready_timeout: Annotated[int, Field(ge=1, le=1440)] = 40

    def _group_size(self) -> int | None:
        return self.server_group_size

    def server_group_members(self, count: int | None = None) -> tuple[int, ...]:
        """Members of each worker server group with `count` workers (the stack's count by default)."""
        return super().server_group_members(self.count if count is None else count)


class BootstrapHelper(Model):
    """A small VM that serves the bootstrap's full ignition over HTTP on the tenant network."""

    flavor: NonEmpty = "m1.small"
    image: NonEmpty = "centos-stream-9"
    ssh_user: NonEmpty = "cloud-user"
    port: Annotated[int, Field(ge=1024, le=65535)] = 8080
    # How `pulumi up` reaches the helper (and `gather bootstrap` the bootstrap) over SSH: a floating IP each, or
    # their fixed IPs from the machine network. Unset: ClusterConfig.bootstrap_floating_ip.
    floating_ip: bool | None = None
    # The key `pulumi up` logs in to the helper with (and `gather bootstrap` uses), by its path:
    # `ssh -i` reads it at run time, so the state holds the path only. None: the SSH agent.
    ssh_private_key_file: NonEmpty | None = None


class Bootstrap(Model):
    enabled: bool = True
    flavor: NonEmpty | None = None
    image: NonEmpty | None = None
    # Where the bootstrap fetches its full config (OpenStack): a private Glance image, fetched with
    # a Keystone token, as the installer does; or the helper VM, for clouds whose image endpoint
    # the machines cannot reach.
    config_source: Literal["glance", "helper"] = "glance"
    # What the Glance shim's X-Auth-Token comes from: an application credential that may only read
    # that image's file, for 24 h, deleted with the bootstrap (Keystone Train or later, and a
    # Glance that honours access rules); or, where the cloud cannot, the user's own token.
    credential: Literal["applicationCredential", "userToken"] = "applicationCredential"
    # The token goes to the catalog's image endpoint: plain http is refused unless written here.
    allow_http_image_endpoint: bool = False
    # The credential is made at, and its secret sent to, the catalog's identity endpoint, and the
    # provider logs in at the clouds.yaml auth_url: plain http is refused unless written here.
    allow_http_identity_endpoint: bool = False
    helper: BootstrapHelper = BootstrapHelper()



LoadBalancerType = Literal["OpenShiftManagedDefault", "UserManaged"]


class Libvirt(Model):
    """libvirt/KVM: which host, where the disks live, the image they start from, the network they join."""

    uri: NonEmpty = "qemu:///system"
    # Storage pool for the base image, every node's disk and every node's ignition file.
    pool: NonEmpty = "default"
    # RHCOS (or FCOS) qcow2 for QEMU: a path on the machine that runs Pulumi, or an http(s) URL.
    # Uploaded once into the pool as every node's backing file. Required: checked with the
    # platform, so that leaving the whole of ocp:libvirt out gets the same message.
    image: NonEmpty | None = None
    # Default (neither set): a NAT network this program creates from ocp:machineNetwork, with
    # the cluster domain and DHCP restricted to the address plan's pool. Else the nodes join an
    # existing libvirt network or a host bridge, by name, whose DHCP is the owner's to arrange.
    network: NonEmpty | None = None
    bridge: NonEmpty | None = None
    # kvm: hardware virtualisation. qemu: software emulation (TCG), far slower, for hosts without
    # usable KVM; components/libvirt/common.py picks each one's CPU mode.
    domain_type: DomainType = "kvm"

    @field_validator("image")
    @classmethod
    def _uncompressed(cls, value: str | None) -> str | None:
        if value is not None and value.endswith((".gz", ".xz", ".bz2", ".zst")):
            raise ValueError(
                f"{value!r} is compressed and libvirt would boot the compressed bytes: decompress it "
                "(gunzip / xz -d) and name the .qcow2"
            )
        return value

    @model_validator(mode="after")
    def _one_network(self) -> Libvirt:
        if self.network is not None and self.bridge is not None:
            raise ValueError(
                "set at most one of ocp:libvirt.network (an existing libvirt network) and ocp:libvirt.bridge "
                "(a host bridge); leave both out to have a NAT network created from ocp:machineNetwork"
            )
        return self


class Installer(Model):
    """Either run `openshift-install` (binary) or read configs it already wrote (assetsDir)."""

    binary: NonEmpty | None = None
    assets_dir: NonEmpty | None = None
    # Where a run leaves its files, for `openshift-install wait-for ... --dir`.
    dir: NonEmpty | None = None
    # `oc`, to read the release payload's image digests after the run (cluster/installer.py).
    oc: NonEmpty = "oc"
    # A directory of the user's own manifests (*.yaml, *.yml, *.json), added to the installer's
    # between `create manifests` and `create ignition-configs` (cluster/manifests.py).
    extra_manifests: NonEmpty | None = None
    # INI lines merged into the installer's manifests/cloud-provider-config.yaml (cluster/cloud_provider_config.py).
    cloud_provider_config: NonEmpty | None = None
    # The installer runs once per cluster; a new generation is a deliberate new PKI and infra
    # ID, refused while the cluster it would orphan exists (cluster/day2.py).
    generation: Annotated[int, Field(ge=1)] = 1

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Installer:
        if (self.binary is None) == (self.assets_dir is None):
            raise ValueError(
                "set exactly one of installer.binary (path of openshift-install to run) "
                "or installer.assetsDir (a directory with bootstrap.ign, master.ign, worker.ign, "
                "metadata.json and auth/)"
            )
        if self.assets_dir is not None and self.dir is not None:
            raise ValueError("installer.dir goes with installer.binary only; remove it or drop assetsDir")
        return self


class Proxy(Model):
    http_proxy: ProxyUrl | None = None
    https_proxy: ProxyUrl | None = None
    no_proxy: NoProxy = ()


class Capabilities(Model):
    """Optional cluster capabilities (the installer's `capabilities`)."""

    baseline_capability_set: Literal["None", "vCurrent", "v4.11", "v4.12", "v4.13", "v4.14", "v4.15", "v4.16", "v4.17", "v4.18"] | None = None
    additional_enabled_capabilities: tuple[NonEmpty, ...] = ()


class ImageDigestSource(Model):
    """A mirror for disconnected installs: images from `source` are pulled from `mirrors`."""

    source: NonEmpty
    mirrors: Annotated[tuple[NonEmpty, ...], Field(min_length=1)]


class ClusterConfig(AddressFamilies):
    platform: Literal["openstack", "libvirt"]
    cluster_name: DnsLabel
    base_domain: DnsName
    # One entry per address family, the primary first (dual-stack: two); the singular
    # properties below are the primary family's.
    machine_networks: MachineNetworks = Field((IPv4Network("10.0.0.0/16"),), alias="machineNetwork")
    api_vips: Vips = Field((), alias="apiVip")
    ingress_vips: Vips = Field((), alias="ingressVip")
    masters: Masters = Masters()
    workers: Workers = Workers()
    bootstrap: Bootstrap = Bootstrap()
    openstack: OpenStack | None = None
    libvirt: Libvirt | None = None
    installer: Installer
    nameservers: Nameservers
    ssh_key: SshPublicKeys
    pull_secret: PullSecret
    proxy: Proxy | None = None
    additional_trust_bundle: PemBundle | None = None
    cluster_networks: ClusterNetworks = Field((ClusterNetwork(),), alias="clusterNetwork")
    service_networks: ServiceNetworks = Field((IPv4Network("172.30.0.0/16"),), alias="serviceNetwork")
    fips: bool = False
    # Time sources for every node (chrony): RHCOS's default pool needs the internet.
    ntp_servers: NtpServers = ()
    capabilities: Capabilities | None = None
    image_digest_sources: tuple[ImageDigestSource, ...] = ()
    tags: Tags = ()
    networking: NetworkingSettings = NetworkingSettings()
    # UserManaged: the user's own balancer fronts 6443, 22623, 80 and 443 on the VIPs (the installer's
    # platform.openstack.loadBalancer.type): no keepalived or haproxy on the nodes, no VIP ports.
    load_balancer: LoadBalancerType = "OpenShiftManagedDefault"
    # `protect` on what a destroy of loses the cluster: the masters (servers or disks, ports,
    # root volumes), the network, subnet and router, the installer's record. Lowered to false
    # before a deliberate destroy; the change touches only that flag.
    protect: bool = True

    @model_validator(mode="after")
    def _consistent(self) -> ClusterConfig:
        # Every cross-key problem at once; load_config splits them into one message each.
        problems = cross_key_problems(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def cluster_domain(self) -> str:
        return f"{self.cluster_name}.{self.base_domain}"

    @property
    def user_managed_lb(self) -> bool:
        """The user's own balancer holds the VIPs (ocp:loadBalancer: UserManaged)."""
        return self.load_balancer == "UserManaged"

    @property
    def integrated(self) -> bool:
        """OpenStack's integrated mode: `platform: openstack`, the MCO runs the VIPs."""
        return self.platform == "openstack" and self.openstack is not None and self.openstack.mode == "integrated"

    @property
    def uses_helper(self) -> bool:
        """A bootstrap helper VM serves the bootstrap's config (bootstrap.configSource: helper)."""
        return self.platform == "openstack" and self.bootstrap.enabled and self.bootstrap.config_source == "helper"

    @property
    def uses_glance(self) -> bool:
        """A private Glance image holds the bootstrap's config (bootstrap.configSource: glance)."""
        return self.platform == "openstack" and self.bootstrap.enabled and self.bootstrap.config_source == "glance"

    @property
    def helper_ssh_cidr(self) -> IPv4Network:
        """Where the bootstrap helper admits SSH from: sshAllowedCidr, else (no floating IP) the machine network."""
        configured = self.openstack.ssh_allowed_cidr if self.openstack else None
        return configured or self.machine_network

    @property
    def worker_pool_flavor(self) -> str | None:
        """The worker pool's flavor: the workers', or the masters' when there are none (the installer needs one)."""
        return self.workers.flavor or self.masters.flavor

    @property
    def bootstrap_floating_ip(self) -> bool:
        """ocp:bootstrap.helper.floatingIp; unset, true but on a network given without a router (day 2 holds older stacks to theirs)."""
        written = self.bootstrap.helper.floating_ip
        return written if written is not None else not (self.platform == "openstack" and self.openstack is not None and self.openstack.given_without_router())

    @property
    def bootstrap_image(self) -> str:
        """The Glance image the bootstrap boots: its own, else the masters'."""
        return self.bootstrap.image or self.masters.openstack_image

"""The cluster's configuration: what a stack file may say, checked before anything is created.

Pure Python (pydantic v2), no Pulumi. `load_config` takes the stack's `ocp:*` keys as
Pulumi hands them to a program (objects as JSON text) and returns a frozen `ClusterConfig`,
or raises `ConfigError` with one message per problem, each naming the key as the user
writes it (`ocp:masters.count`) and saying what to write instead.
"""

from __future__ import annotations

import base64
import difflib
import ipaddress
import json
import re
import ssl
import uuid
from collections.abc import Callable, Iterable, Mapping
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    SecretStr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from cluster.config_base import Model
from cluster.networking import NetworkingSettings

NAMESPACE = "ocp"
SECRET_KEYS = ("pullSecret",)

_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_NAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SSH_KEY = re.compile(r"^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-[a-z0-9@.-]+) [A-Za-z0-9+/=]+( .*)?$")


class ConfigError(ValueError):
    """Invalid stack configuration; `problems` holds one message per bad key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))

    def report(self, heading: str = "invalid stack configuration") -> str:
        """The problems under one heading, as the program prints them."""
        count = len(self.problems)
        return heading + (f" ({count} problems)" if count > 1 else "") + ":\n  " + "\n  ".join(self.problems)


def _dns_label(value: str) -> str:
    if not _DNS_LABEL.match(value) or len(value) > 40:
        raise ValueError(
            f"{value!r} is not a DNS label of at most 40 characters: use lowercase letters, "
            "digits and '-', starting with a letter, e.g. ocp4"
        )
    return value


def _dns_name(value: str) -> str:
    if not _DNS_NAME.match(value):
        raise ValueError(f"{value!r} is not a lowercase DNS name, e.g. example.com")
    return value


def _time_source(value: str) -> str:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        address = None
    if address is not None:
        if address.is_loopback or address.is_unspecified or address.is_multicast:
            raise ValueError(f"{value} is not a time server the nodes can ask: write the address of an NTP server, e.g. 10.20.0.1")
        return value
    # A last label of digits only is a mistyped address (10.0.0.300), never a host name.
    if not _DNS_NAME.match(value.lower()) or value.rsplit(".", 1)[-1].isdigit():
        raise ValueError(f"{value!r} is neither an IP address nor a host name: write e.g. 10.20.0.1 or ntp.example.com")
    return value


def _names_its_type(line: str) -> bool:
    """The key data is padded base64, as the installer requires ("ssh: no key found"), and
    names the type written before it: the installer reads the type from the data alone, but
    sshd on the nodes ignores a line whose two disagree, so that key would never log in."""
    kind, data = line.split()[:2]
    try:
        blob = base64.b64decode(data, validate=True)
    except ValueError:
        return False
    length = int.from_bytes(blob[:4], "big")
    return blob[4 : 4 + length] == kind.encode() and len(blob) > 4 + length


def _ssh_public_keys(value: str) -> str:
    """One or more public keys, one per line (the installer's format); never a private key."""
    if "PRIVATE KEY" in value:
        raise ValueError(
            "is a PRIVATE key: it must never be in a stack file (nor in git or your shell history). "
            "Treat it as leaked: rotate it (ssh-keygen -t ed25519), and write the new PUBLIC key "
            "(the .pub file, 'ssh-ed25519 AAAA... user@host')"
        )
    lines = [line.strip() for line in value.splitlines() if line.strip()]
    bad = [str(number) for number, line in enumerate(lines, 1) if not _SSH_KEY.match(line) or not _names_its_type(line)]
    if not lines or bad:
        where = f" (line {', '.join(bad)})" if len(lines) > 1 else ""
        raise ValueError(
            f"is not an SSH public key{where}: write one key per line, such as 'ssh-ed25519 AAAA... user@host'"
        )
    return "\n".join(lines)


def _canonical_cidr(value: Any) -> Any:
    """A CIDR with host bits set is a typo more often than not: say which network it means."""
    if isinstance(value, str):
        try:
            IPv4Network(value)
        except ValueError:
            try:
                network = ipaddress.ip_network(value, strict=False)
            except ValueError:
                raise ValueError(f"{value!r} is not an IPv4 CIDR: write one such as 203.0.113.7/32") from None
            raise ValueError(f"{value!r} has host bits set: write {network}") from None
    return value


def _list_of_text(value: Any) -> Any:
    """A list, or the installer's comma-separated string ('a,b, c')."""
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


def _nameserver(value: IPv4Address) -> IPv4Address:
    if value.is_loopback or value.is_unspecified or value.is_multicast:
        raise ValueError(
            f"{value} is a local address, not a DNS server the nodes can ask: write the upstream resolver "
            "(a local stub such as 127.0.0.53 forwards to it: see /run/systemd/resolve/resolv.conf)"
        )
    return value


def _distinct(value: tuple[Any, ...]) -> tuple[Any, ...]:
    repeated = sorted({str(item) for item in value if value.count(item) > 1})
    if repeated:
        raise ValueError(f"lists {', '.join(repeated)} more than once: list each once")
    return value


def _not_our_tag(value: str) -> str:
    if value.split("=", 1)[0] == "openshiftClusterID":
        raise ValueError("openshiftClusterID is the tag this program sets (to the infra ID): remove it")
    return value


def _openstack_id(value: str) -> str:
    # The installer takes only IDs here (UUID v4, what Neutron makes), not names.
    try:
        valid = uuid.UUID(value).version == 4
    except ValueError:
        valid = False
    if not valid:
        raise ValueError(
            f"{value!r} is not an OpenStack ID: write the UUID, e.g. from "
            "`openstack network show -f value -c id NAME` or `openstack security group show -f value -c id NAME`"
        )
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsName = Annotated[str, AfterValidator(_dns_name)]
NonEmpty = Annotated[str, Field(min_length=1)]
OpenStackId = Annotated[str, AfterValidator(_openstack_id)]
Cidr = Annotated[IPv4Network, BeforeValidator(_canonical_cidr)]
CidrList = Annotated[tuple[Cidr, ...], BeforeValidator(_list_of_text), AfterValidator(_distinct)]


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


def pem_bundle_problem(value: str) -> str | None:
    """Why the installer would refuse this CA bundle, or None. Like its check, every PEM block
    must be an X.509 certificate, and nothing but blank lines may follow the last one."""
    blocks = list(_PEM_BLOCK.finditer(value))
    if not blocks or blocks[0].group(1) != "CERTIFICATE":
        return "is not a PEM bundle: paste one or more '-----BEGIN CERTIFICATE-----' blocks"
    for number, block in enumerate(blocks, 1):
        try:
            der = base64.b64decode("".join(block.group(2).split()), validate=True)
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=der)
        except (ValueError, ssl.SSLError):
            return (
                f"block {number} ({block.group(1)}) is not an X.509 certificate, and openshift-install refuses the "
                "bundle: paste the certificates' PEM blocks as they are"
            )
    if value[blocks[-1].end() :].strip():
        return "has text after its last certificate, which openshift-install refuses: remove it"
    return None


def _pem_bundle(value: str) -> str:
    problem = pem_bundle_problem(value)
    if problem:
        raise ValueError(problem)
    return value


PemBundle = Annotated[str, AfterValidator(_pem_bundle)]
DEFAULT_OPENSTACK_IMAGE = "rhcos"
ServerGroupPolicy = Literal["soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity"]


class RootVolume(Model):
    """Boot from a Cinder volume instead of the flavor's disk; deleted with the server."""

    size: Annotated[int, Field(ge=25, le=16384, description="GiB; RHCOS needs at least 25")]
    type: NonEmpty | None = None
    # Cinder zones, round-robin like the servers' zones. Nova cannot place a volume it makes
    # from an image, so with zones the program makes each root volume itself.
    availability_zones: tuple[NonEmpty, ...] = ()


class RoleBase(Model):
    """What masters and workers share. OpenStack keys and libvirt keys are each rejected on the other platform."""

    # OpenStack
    flavor: NonEmpty | None = None
    image: NonEmpty | None = None
    root_volume: RootVolume | None = None
    availability_zones: tuple[NonEmpty, ...] = ()
    server_group_policy: ServerGroupPolicy = "soft-anti-affinity"
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

    def libvirt_size(self) -> tuple[int, int, int]:
        """libvirt: (vCPUs, memory MiB, disk GiB) of one domain, the stack's values or the role's defaults."""
        vcpus, memory_mib, disk_gib = self._libvirt_defaults()
        return self.vcpus or vcpus, self.memory_mib or memory_mib, self.disk_gib or disk_gib

    def _libvirt_defaults(self) -> tuple[int, int, int]:
        return 2, 8192, 120  # a worker: OpenShift's minimum is 2 vCPUs and 8 GiB


class Masters(RoleBase):
    count: Literal[1, 3, 5] = 3

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

    def server_group_of(self, index: int) -> int:
        """The server group (0: <infraID>-worker) of the worker in slot `index`."""
        return index // self.server_group_size if self.server_group_size else 0

    def server_group_members(self, count: int | None = None) -> tuple[int, ...]:
        """Members of each worker server group with `count` workers (the stack's count by default);
        there is always the first group."""
        count = self.count if count is None else count
        groups = [0] * (self.server_group_of(count - 1) + 1 if count else 1)
        for index in range(count):
            groups[self.server_group_of(index)] += 1
        return tuple(groups)


class BootstrapHelper(Model):
    """A small VM that serves the bootstrap's full ignition over HTTP on the tenant network."""

    flavor: NonEmpty = "m1.small"
    image: NonEmpty = "centos-stream-9"
    ssh_user: NonEmpty = "cloud-user"
    port: Annotated[int, Field(ge=1024, le=65535)] = 8080
    # Where `pulumi up` reaches the helper over SSH: its floating IP, or its fixed IP when
    # the Pulumi host sits on the machine network itself.
    floating_ip: bool = True
    ssh_private_key_file: NonEmpty | None = None


class Bootstrap(Model):
    enabled: bool = True
    flavor: NonEmpty | None = None
    image: NonEmpty | None = None
    # Where the bootstrap fetches its full config (OpenStack): a private Glance image, fetched with
    # a Keystone token, as the installer does; or the helper VM, for clouds whose image endpoint
    # the machines cannot reach.
    config_source: Literal["glance", "helper"] = "glance"
    helper: BootstrapHelper = BootstrapHelper()


def _floating_ip_choice(value: Any) -> str | IPv4Address:
    if value in (None, "none", "create"):
        return value or "none"
    try:
        return IPv4Address(str(value))
    except ValueError:
        raise ValueError(
            f"{value!r} is not a choice: write an existing floating IP address to use, "
            "'create' for a new one, or 'none'"
        ) from None


FloatingIpChoice = Annotated[Any, AfterValidator(_floating_ip_choice)]


class ExistingNetwork(Model):
    network_id: NonEmpty
    subnet_id: NonEmpty


class OpenStack(Model):
    # integrated: `platform: openstack` (cloud provider, Cinder, Machine API; the MCO runs the
    # VIPs). standalone: `platform: none` with this program's own keepalived/haproxy/CoreDNS.
    mode: Literal["integrated", "standalone"] = "integrated"
    # A private CA of the cloud's APIs (integrated mode: the cluster talks to them).
    ca_bundle: PemBundle | None = None
    # More networks and security groups on every node, by ID (the installer's additionalNetworkIDs,
    # additionalSecurityGroupIDs).
    additional_network_ids: tuple[OpenStackId, ...] = ()
    additional_security_group_ids: tuple[OpenStackId, ...] = ()
    cloud: NonEmpty = "openstack"
    # Skip the checks against the cloud before anything is made (cluster/preflight.py); warned every run.
    skip_preflight: bool = False
    external_network: NonEmpty | None = None
    api_floating_ip: FloatingIpChoice = "none"
    ingress_floating_ip: FloatingIpChoice = "none"
    existing_network: ExistingNetwork | None = None
    # Who may reach what beyond the machine network (cluster/firewall.py). The machine network
    # itself is always admitted; a list replaces the default, [] admits nobody else.
    api_allowed_cidrs: CidrList = (IPv4Network("0.0.0.0/0"),)
    ingress_allowed_cidrs: CidrList = (IPv4Network("0.0.0.0/0"),)
    node_port_allowed_cidrs: CidrList = ()
    # SSH to the bootstrap helper, for `pulumi up`'s upload; required with a helper floating IP.
    ssh_allowed_cidr: Cidr | None = None


DOMAIN_TYPES = ("kvm", "qemu")


def _domain_type(value: Any) -> Any:
    if value not in DOMAIN_TYPES:
        raise ValueError(
            f"{value!r} is not a domain type: write kvm (hardware virtualisation, the default) or qemu "
            "(software emulation, far slower: for a host without usable KVM)"
        )
    return value


DomainType = Annotated[Literal["kvm", "qemu"], BeforeValidator(_domain_type)]


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
    http_proxy: NonEmpty | None = None
    https_proxy: NonEmpty | None = None
    no_proxy: Annotated[tuple[NonEmpty, ...], BeforeValidator(_list_of_text)] = ()

    @field_validator("http_proxy", "https_proxy")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"{value!r} is not a proxy URL: write http://host:port")
        return value


def _pull_secret(value: SecretStr) -> SecretStr:
    try:
        document = json.loads(value.get_secret_value())
    except ValueError:
        raise ValueError(
            "is not JSON: set it with `pulumi config set --secret ocp:pullSecret \"$(cat pull-secret.json)\"`"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("auths"), dict):
        raise ValueError("has no \"auths\" object: use the pull secret downloaded from console.redhat.com")
    return value


def _machine_network_size(value: IPv4Network) -> IPv4Network:
    if value.prefixlen > 24:
        raise ValueError(f"{value} is too small: use a /24 or larger, e.g. 10.0.0.0/16")
    return value


def _list_of_addresses(value: Any) -> Any:
    """A list, or one string: a single address or several separated by commas or spaces."""
    if isinstance(value, str):
        return tuple(item for item in re.split(r"[,\s]+", value) if item)
    return value


MachineNetwork = Annotated[IPv4Network, BeforeValidator(_canonical_cidr), AfterValidator(_machine_network_size)]


class ClusterNetwork(Model):
    """Pod addresses: each node gets a /hostPrefix out of cidr (the installer's networking.clusterNetwork)."""

    cidr: Cidr = IPv4Network("10.128.0.0/14")
    host_prefix: Annotated[int, Field(ge=8, le=30)] = 23

    @model_validator(mode="after")
    def _room_for_nodes(self) -> ClusterNetwork:
        if self.host_prefix <= self.cidr.prefixlen:
            raise ValueError(
                f"hostPrefix {self.host_prefix} leaves no room in {self.cidr} for more than one node: "
                f"write a larger prefix, e.g. hostPrefix: {min(self.cidr.prefixlen + 9, 30)}"
            )
        return self


class Capabilities(Model):
    """Optional cluster capabilities (the installer's `capabilities`)."""

    baseline_capability_set: Literal["None", "vCurrent", "v4.11", "v4.12", "v4.13", "v4.14", "v4.15", "v4.16", "v4.17", "v4.18"] | None = None
    additional_enabled_capabilities: tuple[NonEmpty, ...] = ()


class ImageDigestSource(Model):
    """A mirror for disconnected installs: images from `source` are pulled from `mirrors`."""

    source: NonEmpty
    mirrors: Annotated[tuple[NonEmpty, ...], Field(min_length=1)]


class ClusterConfig(Model):
    platform: Literal["openstack", "libvirt"]
    cluster_name: DnsLabel
    base_domain: DnsName
    machine_network: MachineNetwork = IPv4Network("10.0.0.0/16")
    api_vip: IPv4Address | None = None
    ingress_vip: IPv4Address | None = None
    masters: Masters = Masters()
    workers: Workers = Workers()
    bootstrap: Bootstrap = Bootstrap()
    openstack: OpenStack | None = None
    libvirt: Libvirt | None = None
    installer: Installer
    nameservers: Annotated[
        tuple[Annotated[IPv4Address, AfterValidator(_nameserver)], ...],
        BeforeValidator(_list_of_addresses),
        Field(min_length=1, max_length=3),
        AfterValidator(_distinct),
    ]
    ssh_key: Annotated[str, AfterValidator(_ssh_public_keys)]
    pull_secret: Annotated[SecretStr, AfterValidator(_pull_secret)]
    proxy: Proxy | None = None
    additional_trust_bundle: PemBundle | None = None
    cluster_network: ClusterNetwork = ClusterNetwork()
    service_network: Cidr = IPv4Network("172.30.0.0/16")
    fips: bool = False
    # Time sources for every node (chrony): RHCOS's default pool needs the internet.
    ntp_servers: Annotated[
        tuple[Annotated[str, AfterValidator(_time_source)], ...], BeforeValidator(_list_of_text), Field(min_length=1, max_length=16), AfterValidator(_distinct)
    ] = ()
    capabilities: Capabilities | None = None
    image_digest_sources: tuple[ImageDigestSource, ...] = ()
    tags: Annotated[
        tuple[Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_not_our_tag)], ...],
        AfterValidator(_distinct),
    ] = ()
    networking: NetworkingSettings = NetworkingSettings()

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
        """Where the bootstrap helper admits SSH from: sshAllowedCidr, else (no floating IP,
        Pulumi runs inside) the machine network."""
        configured = self.openstack.ssh_allowed_cidr if self.openstack else None
        return configured or self.machine_network

    @property
    def worker_pool_flavor(self) -> str | None:
        """The flavor a description of the worker pool names: the workers', or the masters' when
        the workers have none (count 0), since the installer and the Machine API need one."""
        return self.workers.flavor or self.masters.flavor

    @property
    def bootstrap_image(self) -> str:
        """The Glance image the bootstrap boots: its own, else the masters'."""
        return self.bootstrap.image or self.masters.openstack_image


# --------------------------------------------------------------------------- cross-key checks
# Each check reads a few top-level keys and yields messages. When some keys are invalid on
# their own, load_config still runs every check that reads only valid ones (see _Partial),
# so one run reports every problem.


def _other_platform(c: Any) -> Iterable[str]:
    other = _OTHER[c.platform]
    if getattr(c, other) is not None:
        yield f"ocp:{other} is set but ocp:platform is {c.platform}: remove ocp:{other}"


_OTHER = {"openstack": "libvirt", "libvirt": "openstack"}
_OPENSTACK_ROLE_KEYS = ("flavor", "image", "root_volume", "availability_zones", "server_group_policy", "server_group_size")
_LIBVIRT_ROLE_KEYS = ("vcpus", "memory_mib", "disk_gib")


def _role_keys_of_the_platform(c: Any) -> Iterable[str]:
    wrong = _LIBVIRT_ROLE_KEYS if c.platform == "openstack" else _OPENSTACK_ROLE_KEYS
    for role in ("masters", "workers"):
        for name in wrong:
            if name in getattr(c, role).model_fields_set:
                yield f"ocp:{role}.{to_camel(name)} is a {_OTHER[c.platform]} setting and ocp:platform is {c.platform}: remove it"


def _openstack_section(c: Any) -> Iterable[str]:
    if c.platform == "openstack" and c.openstack is None:
        yield "ocp:openstack is required with platform openstack: set at least externalNetwork"


def _flavors(c: Any) -> Iterable[str]:
    if c.platform != "openstack":
        return
    for role, minimum in (("masters", "4 vCPUs and 16 GiB RAM"), ("workers", "2 vCPUs and 8 GiB RAM")):
        section = getattr(c, role)
        if section.flavor is None and (role == "masters" or section.count > 0):
            yield f"ocp:{role}.flavor is required on OpenStack: name a flavor with at least {minimum}"


def _external_network(c: Any) -> Iterable[str]:
    if c.platform != "openstack" or c.openstack is None or c.openstack.external_network is not None:
        return
    needs_external = [
        key
        for key, needed in (
            ("router (no existingNetwork)", c.openstack.existing_network is None),
            ("apiFloatingIp", c.openstack.api_floating_ip != "none"),
            ("ingressFloatingIp", c.openstack.ingress_floating_ip != "none"),
            ("bootstrap.helper.floatingIp", c.bootstrap.helper.floating_ip and c.bootstrap.enabled),
        )
        if needed
    ]
    if needs_external:
        yield (
            "ocp:openstack.externalNetwork is required for " + ", ".join(needs_external)
            + ": write the name of the external network, e.g. externalNetwork: external"
        )


def _helper_ssh(c: Any) -> Iterable[str]:
    reached_from_outside = c.bootstrap.enabled and c.bootstrap.helper.floating_ip
    if c.platform == "openstack" and c.openstack is not None and reached_from_outside:
        if c.openstack.ssh_allowed_cidr is None:
            why = (
                "the bootstrap helper has a floating IP: `pulumi up` copies the bootstrap config onto it over SSH"
                if c.bootstrap.config_source == "helper"
                else "the bootstrap has a floating IP (ocp:bootstrap.helper.floatingIp, true by default): "
                "`openshift-install gather bootstrap` reaches it over SSH"
            )
            yield (
                f"ocp:openstack.sshAllowedCidr is required when {why} from outside the machine network. Write the "
                "address Pulumi runs from, e.g. sshAllowedCidr: 203.0.113.7/32 (or set ocp:bootstrap.helper.floatingIp "
                "false and run Pulumi inside the machine network)"
            )


def _libvirt_settings(c: Any) -> Iterable[str]:
    if c.platform != "libvirt":
        return
    if c.libvirt is None or c.libvirt.image is None:
        yield (
            "ocp:libvirt.image is required with platform libvirt: write the path (on the machine that runs "
            "Pulumi) or the http(s) URL of an RHCOS qcow2 for QEMU, e.g. "
            "image: /var/lib/libvirt/images/rhcos-qemu.x86_64.qcow2"
        )
    for field, key in (("helper", "helper"), ("config_source", "configSource")):
        if field in c.bootstrap.model_fields_set:
            yield (
                f"ocp:bootstrap.{key} is an OpenStack setting and ocp:platform is libvirt: remove it "
                "(libvirt passes the bootstrap its full ignition directly)"
            )
    for name in ("flavor", "image"):
        if name in c.bootstrap.model_fields_set:
            yield (
                f"ocp:bootstrap.{name} is an OpenStack setting and ocp:platform is libvirt: remove it "
                "(the bootstrap is sized like the masters: ocp:masters.vcpus, memoryMib, diskGib; "
                "its image is ocp:libvirt.image)"
            )


def _openstack_tags(c: Any) -> Iterable[str]:
    if c.platform == "libvirt" and "tags" in c.model_fields_set:
        yield "ocp:tags is an OpenStack setting and ocp:platform is libvirt: remove it"


def _workers_within_reserve(c: Any) -> Iterable[str]:
    if c.workers.count > c.workers.max_count:
        yield (
            f"ocp:workers.count: {c.workers.count} is more than ocp:workers.maxCount {c.workers.max_count}: "
            "lower the count or raise workers.maxCount (it reserves addresses; the subnet's DHCP pool shrinks accordingly)"
        )


def _zones(c: Any) -> Iterable[str]:
    zones, count = c.masters.availability_zones, c.masters.count
    if len(zones) > count:
        yield (
            f"ocp:masters.availabilityZones lists {len(zones)} zones for {count} masters: {', '.join(zones[count:])} "
            f"would hold none. List at most {count} (masters go round-robin over the list)"
        )


def _root_volume_zones(c: Any) -> Iterable[str]:
    # The installer's rules: with compute zones a root volume names its zones too; node i's
    # volume zone pairs with its compute zone, or one zone serves all.
    for role in ("masters", "workers"):
        section = getattr(c, role)
        volume_zones = section.root_volume.availability_zones if section.root_volume else ()
        if section.root_volume and section.availability_zones and not volume_zones:
            yield (
                f"ocp:{role}.rootVolume.availabilityZones: required with ocp:{role}.availabilityZones (the installer "
                "refuses root volumes without zones when servers have zones): list the Cinder zones "
                "(`openstack availability zone list --volume`), one for all nodes or one per compute zone, e.g. [nova]"
            )
        if len(volume_zones) > 1 and len(volume_zones) != len(section.availability_zones):
            yield (
                f"ocp:{role}.rootVolume.availabilityZones lists {len(volume_zones)} zones and "
                f"ocp:{role}.availabilityZones {len(section.availability_zones)}: node N's volume is made in the "
                "zone at the same place as its server's, so list one volume zone for all nodes or as many as compute zones"
            )


def _added_at_the_installer_run(c: Any) -> Iterable[str]:
    # Both go into the installer's manifests when the program runs it; assetsDir configs are made already.
    if c.installer.extra_manifests is not None and c.installer.assets_dir is not None:
        yield (
            "ocp:installer.extraManifests goes with installer.binary only: configs in ocp:installer.assetsDir are "
            "made already, so add the manifests to the openshift/ directory of your own `openshift-install create "
            "manifests` before `create ignition-configs`, and remove extraManifests"
        )
    if c.ntp_servers and c.installer.assets_dir is not None:
        yield (
            "ocp:ntpServers: masters and workers get them from the MachineConfigs 99-master-chrony and "
            "99-worker-chrony that the program adds when it runs the installer, and configs in "
            "ocp:installer.assetsDir are made already: add those MachineConfigs to the openshift/ directory of your "
            "own `openshift-install create manifests` (OpenShift's docs show them) and leave ntpServers out, or set "
            "installer.binary"
        )


def _fips_ssh_keys(c: Any) -> Iterable[str]:
    # The installer's rule: FIPS mode takes only RSA and ECDSA keys.
    if c.fips:
        kinds = {line.split()[0] for line in c.ssh_key.splitlines() if line.strip()}
        others = sorted(kind for kind in kinds if kind != "ssh-rsa" and not kind.startswith("ecdsa-sha2-nistp"))
        if others:
            yield (
                f"ocp:sshKey: {', '.join(others)} keys cannot be used with ocp:fips true (the installer refuses them): "
                "write RSA or ECDSA keys ('ssh-keygen -t ecdsa'), or leave fips out"
            )


def _machine_network_clear(c: Any) -> Iterable[str]:
    # The cluster's own networks (ocp:clusterNetwork, ocp:serviceNetwork) and OVN-Kubernetes' internal ones.
    network = c.machine_network
    for other, what in (
        (c.cluster_network.cidr, "the cluster network (pod addresses, ocp:clusterNetwork)"),
        (c.service_network, "the service network (ocp:serviceNetwork)"),
        *_OVN_NETWORKS,
    ):
        if network.overlaps(other):
            yield (
                f"ocp:machineNetwork: {network} overlaps {what} {other}: the nodes could not reach each other "
                "there; pick a network outside it, e.g. 10.0.0.0/16 or 192.168.100.0/24"
            )


_OVN_NETWORKS = (
    (IPv4Network("100.64.0.0/16"), "OVN-Kubernetes' join network"),
    (IPv4Network("100.88.0.0/16"), "OVN-Kubernetes' transit network"),
    (IPv4Network("169.254.0.0/16"), "the link-local range (metadata service, OVN masquerade)"),
)


def _cluster_networks_apart(c: Any) -> Iterable[str]:
    pods, services = c.cluster_network.cidr, c.service_network
    if pods.overlaps(services):
        yield (
            f"ocp:serviceNetwork: {services} overlaps ocp:clusterNetwork {pods}: services and pods need "
            "separate ranges, e.g. serviceNetwork: 172.30.0.0/16"
        )
    for other, what in _OVN_NETWORKS:
        for key, network in (("clusterNetwork", pods), ("serviceNetwork", services)):
            if network.overlaps(other):
                yield f"ocp:{key}: {network} overlaps {what} {other}: pick a range outside it"


def _integrated_only(c: Any) -> Iterable[str]:
    if c.openstack is None or c.openstack.mode == "integrated":
        return
    if c.openstack.ca_bundle is not None:
        yield (
            "ocp:openstack.caBundle is for the cluster's own calls to the cloud (mode integrated); in "
            "standalone mode the cluster does not talk to OpenStack: remove it"
        )


def _what_integrated_mode_needs(c: Any) -> Iterable[str]:
    if c.openstack is None or c.openstack.mode != "integrated":
        return
    if c.openstack.existing_network is not None:
        yield (
            "ocp:openstack.existingNetwork works in standalone mode only: an integrated cluster's cloud "
            "provider and Machine API find the network and subnet by the openshiftClusterID tag this program "
            "puts on the ones it makes; remove existingNetwork, or set openstack.mode: standalone"
        )
    for name in sorted(c.networking.model_fields_set - {"router_nodes"}):
        yield (
            f"ocp:networking.{to_camel(name)} sets this program's own keepalived, haproxy or CoreDNS (standalone "
            "mode, libvirt); in integrated mode the machine-config-operator runs them: remove it"
        )
    for role in ("masters", "workers"):
        volume = getattr(c, role).root_volume
        if volume is not None and volume.type is None:
            yield (
                f"ocp:{role}.rootVolume.type is required in integrated mode (the installer refuses a root "
                "volume without one): name a volume type from `openstack volume type list`"
            )


def _addresses(c: Any) -> Iterable[str]:
    from cluster import addresses  # it imports this module; its functions take plain values

    yield from addresses.placement_problems(
        c.machine_network, c.cluster_name, c.api_vip, c.ingress_vip, c.workers.max_count
    )


def _nameservers_outside_the_cluster(c: Any) -> Iterable[str]:
    from cluster import addresses

    network = c.machine_network
    api_vip, ingress_vip = addresses.effective_vips(network, c.api_vip, c.ingress_vip)
    ours = {
        **addresses.reserved_addresses(network, c.cluster_name, c.workers.max_count),
        api_vip: "the API VIP",
        ingress_vip: "the Ingress VIP",
    }
    ours.pop(addresses.gateway(network), None)  # a router or the libvirt host may well serve DNS
    for server in c.nameservers:
        if server in ours:
            yield (
                f"ocp:nameservers: {server} is {ours[server]}: the nodes' CoreDNS forwards there and would ask "
                "itself; write the upstream DNS servers"
            )


def _floating_ips(c: Any) -> Iterable[str]:
    if c.openstack is None:
        return
    chosen = {
        key: address
        for key, address in (("apiFloatingIp", c.openstack.api_floating_ip), ("ingressFloatingIp", c.openstack.ingress_floating_ip))
        if isinstance(address, IPv4Address)
    }
    for key, address in chosen.items():
        if address in c.machine_network:
            yield (
                f"ocp:openstack.{key}: {address} is in ocp:machineNetwork {c.machine_network}: a floating IP is an "
                "address of the external network (`openstack floating ip list`), or write 'create'"
            )
    if len(chosen) == 2 and chosen["apiFloatingIp"] == chosen["ingressFloatingIp"]:
        yield (
            f"ocp:openstack.ingressFloatingIp: {chosen['ingressFloatingIp']} is also apiFloatingIp: a floating IP "
            "maps to one port, so each VIP needs its own; write another address or 'create'"
        )


CHECKS: tuple[Callable[[Any], Iterable[str]], ...] = (
    _other_platform,
    _role_keys_of_the_platform,
    _openstack_section,
    _flavors,
    _external_network,
    _helper_ssh,
    _floating_ips,
    _libvirt_settings,
    _openstack_tags,
    _workers_within_reserve,
    _zones,
    _root_volume_zones,
    _fips_ssh_keys,
    _added_at_the_installer_run,
    _machine_network_clear,
    _cluster_networks_apart,
    _integrated_only,
    _what_integrated_mode_needs,
    _addresses,
    _nameservers_outside_the_cluster,
)


class _Invalid(Exception):
    """A check read a key that is invalid on its own (already reported): skip the check."""


class _Partial:
    """The top-level keys that are valid on their own, for checks when the whole is not."""

    def __init__(self, values: dict[str, Any], fields_set: set[str]):
        self._values = values
        self.model_fields_set = fields_set

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise _Invalid(name) from None


def cross_key_problems(config: Any) -> list[str]:
    problems = []
    for check in CHECKS:
        try:
            problems += list(check(config))
        except _Invalid:
            continue
    return problems


# --------------------------------------------------------------------------- reading the stack's keys

# Keys the program reads; anything else in the `ocp:` namespace is an error.
KNOWN_KEYS = tuple(to_camel(name) for name in ClusterConfig.model_fields)
# Keys whose value is an object or a list: Pulumi hands those over as JSON text.
STRUCTURED_KEYS = frozenset(
    {
        "masters", "workers", "bootstrap", "openstack", "libvirt", "installer", "nameservers", "proxy", "tags",
        "networking", "clusterNetwork", "capabilities", "imageDigestSources", "ntpServers",
    }
)
# Lists the installer also takes as one string (one address, or comma-separated).
SCALAR_LISTS = frozenset({"nameservers", "ntpServers"})
# The default OpenStack provider's key; the program's own provider reads ocp:openstack.cloud.
PROVIDER_CLOUD = "openstack:cloud"


def parse_raw(raw: Mapping[str, str], problems: list[str] | None = None) -> dict[str, Any]:
    """Turn Pulumi's `ocp:key -> text` config into model input; objects arrive as JSON text.
    A key that cannot be read is left out and its problem appended to `problems` (raised
    as ConfigError when no list is passed)."""
    found: list[str] = []
    data: dict[str, Any] = {}
    for full_key, text in raw.items():
        namespace, _, key = full_key.partition(":")
        if namespace != NAMESPACE:
            continue
        if isinstance(text, str) and not text.strip():
            found.append(f"ocp:{key}: is empty: give it a value or remove the line")
        elif key in STRUCTURED_KEYS and isinstance(text, str):
            try:
                data[key] = json.loads(text)
            except ValueError as error:
                if key in SCALAR_LISTS:
                    data[key] = text
                else:
                    found.append(f"ocp:{key}: expected an object or a list, got text that is not JSON ({error.msg})")
        else:
            data[key] = text
    if problems is None and found:
        raise ConfigError(found)
    if problems is not None:
        problems += found
    return data


def load_config(raw: Mapping[str, str]) -> ClusterConfig:
    """The stack's configuration (`ocp:*` keys, and `openstack:cloud` if set), or ConfigError
    listing every problem at once."""
    problems: list[str] = []
    data = parse_raw(raw, problems)
    unreadable = {problem.split(":", 2)[1] for problem in problems}
    problems += _provider_cloud(raw.get(PROVIDER_CLOUD), data)
    for key in sorted(set(data) - set(KNOWN_KEYS)):
        problems.append(f"ocp:{key}: not a setting of this program{_did_you_mean(key, KNOWN_KEYS)}")
        del data[key]
    try:
        config = ClusterConfig.model_validate(data)
    except ValidationError as error:
        items = [item for item in error.errors() if not (item["type"] == "missing" and item["loc"][0] in unreadable)]
        problems += [message for item in items for message in _describe(item)]
        if all(item["loc"] for item in items):  # cross-key checks did not run: run those they can
            problems += cross_key_problems(_partial(data))
        raise ConfigError(list(dict.fromkeys(problems))) from None
    if problems:
        raise ConfigError(problems)
    return config


def _provider_cloud(cloud: str | None, data: dict[str, Any]) -> list[str]:
    """One source of truth for the cloud: ocp:openstack.cloud, taken from openstack:cloud when
    only that is set; two different values are refused."""
    section = data.get("openstack")
    if cloud is None or not isinstance(section, dict):
        return []
    if "cloud" not in section:
        data["openstack"] = {**section, "cloud": cloud}
        return []
    if section["cloud"] != cloud:
        return [
            f"ocp:openstack.cloud: {section['cloud']!r} contradicts {PROVIDER_CLOUD} {cloud!r}, and the program "
            f"creates every resource in ocp:openstack.cloud: remove {PROVIDER_CLOUD} (or make both the same "
            "clouds.yaml entry)"
        ]
    return []


def _partial(data: Mapping[str, Any]) -> _Partial:
    values = {}
    for name, field in ClusterConfig.model_fields.items():
        key = to_camel(name)
        if key in data:
            try:
                values[name] = _adapter(name).validate_python(data[key])
            except ValidationError:
                continue
        elif not field.is_required():
            values[name] = field.get_default(call_default_factory=True)
    return _Partial(values, {name for name in ClusterConfig.model_fields if to_camel(name) in data})


_ADAPTERS: dict[str, TypeAdapter] = {}


def _adapter(name: str) -> TypeAdapter:
    if name not in _ADAPTERS:
        _ADAPTERS[name] = TypeAdapter(ClusterConfig.model_fields[name].rebuild_annotation())
    return _ADAPTERS[name]


# Hints for required keys, by the end of their path.
_REQUIRED_HINTS = {
    "rootVolume.size": (
        "is required: the boot volume's size in GiB, e.g. size: 120 (or remove rootVolume to boot from the flavor's disk)"
    ),
}


def _describe(item: Mapping[str, Any]) -> list[str]:
    path = [str(part) for part in item["loc"] if not _is_union_tag(part)]
    message = item["msg"].removeprefix("Value error, ")
    if item["type"] == "extra_forbidden":
        message = "unknown key" + (
            _did_you_mean(path[-1], _keys_at(path[:-1])) or ": remove it or check its spelling against the README's config reference"
        )
    elif item["type"] in ("tuple_type", "list_type"):
        message = "is not a list: write [a, b], or one `- item` per line under the key"
    elif item["type"] == "missing":
        dotted = ".".join(path)
        message = next((hint for end, hint in _REQUIRED_HINTS.items() if dotted.endswith(end)), "is required")
    if not path:  # model-level validators name their keys in the message, one problem per line
        return message.splitlines()
    key = f"ocp:{path[0]}" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path[1:])
    return [f"{key}: {message}"]


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    known = list(known)
    if to_camel(key) in known and to_camel(key) != key:
        return f": keys are camelCase, write {to_camel(key)}"
    close = [name for name in known if name.lower() == key.lower()] or difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f": did you mean {close[0]}?"
    return f" (known: {', '.join(sorted(known))})" if known else ""


def _keys_at(path: list[str]) -> list[str]:
    """The keys the model accepts at `path` (camelCase), for spelling suggestions."""
    model: type[BaseModel] | None = ClusterConfig
    for part in path:
        field = next((f for n, f in model.model_fields.items() if part in (n, to_camel(n))), None) if model else None
        model = _model_in(field.annotation) if field else None
    return [to_camel(name) for name in model.model_fields] if model else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def _is_union_tag(part: Any) -> bool:
    # pydantic names union branches in locations ("literal['create','none']", "function-after[...]")
    return isinstance(part, str) and ("[" in part or part in {"str", "int", "IPv4Address"})

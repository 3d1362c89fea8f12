"""The cluster's configuration: what a stack file may say, checked before anything is created.

Pure Python (pydantic v2), no Pulumi. `load_config` takes the stack's `ocp:*` keys as
Pulumi hands them to a program (objects as JSON text) and returns a frozen `ClusterConfig`,
or raises `ConfigError` with one message per problem, each naming the key as the user
writes it (`ocp:masters.count`) and saying what to write instead.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    SecretStr,
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


def _ssh_public_key(value: str) -> str:
    value = value.strip()
    if not _SSH_KEY.match(value):
        raise ValueError("is not an SSH public key: write one line such as 'ssh-ed25519 AAAA... user@host'")
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsName = Annotated[str, AfterValidator(_dns_name)]
NonEmpty = Annotated[str, Field(min_length=1)]
ServerGroupPolicy = Literal["soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity"]


class RootVolume(Model):
    """Boot from a Cinder volume instead of the flavor's disk; deleted with the server."""

    size: Annotated[int, Field(ge=25, le=16384, description="GiB; RHCOS needs at least 25")]
    type: NonEmpty | None = None


class RoleBase(Model):
    """What masters and workers share. OpenStack keys and libvirt keys are each rejected on the other platform."""

    # OpenStack
    flavor: NonEmpty | None = None
    image: NonEmpty | None = None
    root_volume: RootVolume | None = None
    availability_zones: tuple[NonEmpty, ...] = ()
    server_group_policy: ServerGroupPolicy = "soft-anti-affinity"
    # libvirt
    vcpus: Annotated[int, Field(ge=1, le=256)] | None = None
    memory_mib: Annotated[int, Field(ge=2048, le=1048576)] | None = None
    disk_gib: Annotated[int, Field(ge=25, le=16384)] | None = None

    def libvirt_size(self) -> tuple[int, int, int]:
        """libvirt: (vCPUs, memory MiB, disk GiB) of one domain, the stack's values or the role's defaults."""
        vcpus, memory_mib, disk_gib = self._libvirt_defaults()
        return self.vcpus or vcpus, self.memory_mib or memory_mib, self.disk_gib or disk_gib

    def _libvirt_defaults(self) -> tuple[int, int, int]:
        return 2, 8192, 120  # a worker: OpenShift's minimum is 2 vCPUs and 8 GiB


class Masters(RoleBase):
    count: Literal[1, 3, 5] = 3

    def _libvirt_defaults(self) -> tuple[int, int, int]:
        return 4, 16384, 120  # OpenShift's minimum for a control plane node (and the bootstrap)


class Workers(RoleBase):
    count: Annotated[int, Field(ge=0, le=500)] = 2
    # Addresses (and DNS names, VRRP peers) are reserved for this many workers up front, so
    # scaling within it changes nothing on any existing node. Each slot adds ~90 bytes to every
    # node's user_data (CoreDNS hosts, VRRP peers); 500 keeps masters well inside 16 KiB.
    max_count: Annotated[int, Field(ge=1, le=500)] = 100

    @model_validator(mode="after")
    def _count_within_reserve(self) -> Workers:
        if self.count > self.max_count:
            raise ValueError(
                f"count {self.count} is more than maxCount {self.max_count}: raise workers.maxCount "
                "(it reserves addresses; the subnet's DHCP pool shrinks accordingly)"
            )
        return self


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
    cloud: NonEmpty = "openstack"
    external_network: NonEmpty | None = None
    api_floating_ip: FloatingIpChoice = "none"
    ingress_floating_ip: FloatingIpChoice = "none"
    existing_network: ExistingNetwork | None = None
    ssh_allowed_cidr: IPv4Network | None = None


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
    no_proxy: tuple[NonEmpty, ...] = ()

    @field_validator("http_proxy", "https_proxy")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError(f"{value!r} is not a proxy URL: write http://host:port")
        return value


def _pem_bundle(value: str) -> str:
    if "-----BEGIN CERTIFICATE-----" not in value:
        raise ValueError("is not a PEM bundle: paste one or more '-----BEGIN CERTIFICATE-----' blocks")
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


class ClusterConfig(Model):
    platform: Literal["openstack", "libvirt"]
    cluster_name: DnsLabel
    base_domain: DnsName
    machine_network: IPv4Network = IPv4Network("10.0.0.0/16")
    api_vip: IPv4Address | None = None
    ingress_vip: IPv4Address | None = None
    masters: Masters = Masters()
    workers: Workers = Workers()
    bootstrap: Bootstrap = Bootstrap()
    openstack: OpenStack | None = None
    libvirt: Libvirt | None = None
    installer: Installer
    nameservers: Annotated[tuple[IPv4Address, ...], Field(min_length=1, max_length=3)]
    ssh_key: Annotated[str, AfterValidator(_ssh_public_key)]
    pull_secret: Annotated[SecretStr, AfterValidator(_pull_secret)]
    proxy: Proxy | None = None
    additional_trust_bundle: Annotated[str, AfterValidator(_pem_bundle)] | None = None
    tags: tuple[Annotated[str, Field(min_length=1, max_length=255)], ...] = ()
    networking: NetworkingSettings = NetworkingSettings()

    @field_validator("machine_network", mode="before")
    @classmethod
    def _network_in_canonical_form(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                IPv4Network(value)
            except ValueError:
                network = ipaddress.ip_network(value, strict=False)
                raise ValueError(f"{value!r} has host bits set: write {network}") from None
        return value

    @field_validator("machine_network")
    @classmethod
    def _network_size(cls, value: IPv4Network) -> IPv4Network:
        if value.prefixlen > 24:
            raise ValueError(f"{value} is too small: use a /24 or larger, e.g. 10.0.0.0/16")
        return value

    @model_validator(mode="after")
    def _platform_sections(self) -> ClusterConfig:
        platform, other = self.platform, {"openstack": "libvirt", "libvirt": "openstack"}[self.platform]
        if getattr(self, other) is not None:
            raise ValueError(f"ocp:{other} is set but ocp:platform is {platform}: remove ocp:{other}")
        openstack_only = ("flavor", "image", "root_volume", "availability_zones", "server_group_policy")
        libvirt_only = ("vcpus", "memory_mib", "disk_gib")
        wrong = libvirt_only if platform == "openstack" else openstack_only
        for role in ("masters", "workers"):
            section = getattr(self, role)
            for name in wrong:
                if name in section.model_fields_set:
                    raise ValueError(
                        f"ocp:{role}.{to_camel(name)} is a {other} setting and ocp:platform is {platform}: remove it"
                    )
        if platform == "openstack":
            if self.openstack is None:
                raise ValueError("ocp:openstack is required with platform openstack: set at least externalNetwork")
            for role in ("masters", "workers"):
                section = getattr(self, role)
                if section.flavor is None and (role == "masters" or section.count > 0):
                    raise ValueError(
                        f"ocp:{role}.flavor is required on OpenStack: name a flavor with at least "
                        f"{'4 vCPUs and 16 GiB RAM' if role == 'masters' else '2 vCPUs and 8 GiB RAM'}"
                    )
            self._check_openstack_external_network()
        if platform == "libvirt":
            self._check_libvirt()
        return self

    def _check_libvirt(self) -> None:
        if self.libvirt is None or self.libvirt.image is None:
            raise ValueError(
                "ocp:libvirt.image is required with platform libvirt: write the path (on the machine that runs "
                "Pulumi) or the http(s) URL of an RHCOS qcow2 for QEMU, e.g. "
                "image: /var/lib/libvirt/images/rhcos-qemu.x86_64.qcow2"
            )
        if "helper" in self.bootstrap.model_fields_set:
            raise ValueError(
                "ocp:bootstrap.helper is an OpenStack setting and ocp:platform is libvirt: remove it "
                "(libvirt passes the bootstrap its full ignition directly)"
            )
        for name in ("flavor", "image"):
            if name in self.bootstrap.model_fields_set:
                raise ValueError(
                    f"ocp:bootstrap.{name} is an OpenStack setting and ocp:platform is libvirt: remove it "
                    "(the bootstrap is sized like the masters: ocp:masters.vcpus, memoryMib, diskGib; "
                    "its image is ocp:libvirt.image)"
                )
        if "tags" in self.model_fields_set:
            raise ValueError("ocp:tags is an OpenStack setting and ocp:platform is libvirt: remove it")

    def _check_openstack_external_network(self) -> None:
        assert self.openstack is not None
        needs_external = [
            key
            for key, needed in (
                ("router (no existingNetwork)", self.openstack.existing_network is None),
                ("apiFloatingIp", self.openstack.api_floating_ip != "none"),
                ("ingressFloatingIp", self.openstack.ingress_floating_ip != "none"),
                ("bootstrap.helper.floatingIp", self.bootstrap.helper.floating_ip and self.bootstrap.enabled),
            )
            if needed
        ]
        if needs_external and self.openstack.external_network is None:
            raise ValueError(
                "ocp:openstack.externalNetwork is required for "
                + ", ".join(needs_external)
                + ": write the name of the external network, e.g. externalNetwork: external"
            )

    @property
    def cluster_domain(self) -> str:
        return f"{self.cluster_name}.{self.base_domain}"

    @property
    def ssh_allowed_cidr(self) -> IPv4Network:
        configured = self.openstack.ssh_allowed_cidr if self.openstack else None
        return configured or self.machine_network


# Keys the program reads; anything else in the `ocp:` namespace is an error.
KNOWN_KEYS = tuple(to_camel(name) for name in ClusterConfig.model_fields)
# Keys whose value is an object or a list: Pulumi hands those over as JSON text.
STRUCTURED_KEYS = frozenset(
    {"masters", "workers", "bootstrap", "openstack", "libvirt", "installer", "nameservers", "proxy", "tags", "networking"}
)


def parse_raw(raw: Mapping[str, str]) -> dict[str, Any]:
    """Turn Pulumi's `ocp:key -> text` config into model input; objects arrive as JSON text."""
    data: dict[str, Any] = {}
    for full_key, text in raw.items():
        namespace, _, key = full_key.partition(":")
        if namespace != NAMESPACE:
            continue
        if key in STRUCTURED_KEYS and isinstance(text, str):
            try:
                data[key] = json.loads(text)
            except ValueError as error:
                raise ConfigError([f"ocp:{key}: expected an object or a list, got text that is not JSON ({error.msg})"]) from None
        else:
            data[key] = text
    return data


def load_config(raw: Mapping[str, str]) -> ClusterConfig:
    data = parse_raw(raw)
    unknown = sorted(set(data) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(
            [f"ocp:{key}: not a setting of this program (known: {', '.join(sorted(KNOWN_KEYS))})" for key in unknown]
        )
    try:
        return ClusterConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError([_describe(item) for item in error.errors()]) from None


def _describe(item: Mapping[str, Any]) -> str:
    path = [str(part) for part in item["loc"] if not _is_union_tag(part)]
    message = item["msg"].removeprefix("Value error, ")
    if item["type"] == "extra_forbidden":
        message = "unknown key: remove it or check its spelling against the README's config reference"
    elif item["type"] == "missing":
        message = "is required"
    if not path:  # model-level validators name their key in the message
        return message
    key = f"ocp:{path[0]}" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path[1:])
    return f"{key}: {message}"


def _is_union_tag(part: Any) -> bool:
    # pydantic names union branches in locations ("literal['create','none']", "function-after[...]")
    return isinstance(part, str) and ("[" in part or part in {"str", "int", "IPv4Address"})


def check_local_files(config: ClusterConfig) -> None:
    """Files the program reads on the machine that runs it; missing ones stop it before any resource."""
    from ignition.installer_assets import ASSET_FILES

    problems = []
    if config.installer.assets_dir is not None:
        directory = Path(config.installer.assets_dir)
        missing = [name for name in ASSET_FILES if not (directory / name).is_file()]
        if missing:
            problems.append(
                f"ocp:installer.assetsDir: {directory} lacks {', '.join(missing)}: point it at the --dir of "
                "`openshift-install create ignition-configs`"
            )
    key_file = config.bootstrap.helper.ssh_private_key_file
    if config.platform == "openstack" and config.bootstrap.enabled and key_file is not None:
        if not Path(key_file).expanduser().is_file():
            problems.append(
                f"ocp:bootstrap.helper.sshPrivateKeyFile: {key_file} is not a file: name the private key "
                "matching ocp:sshKey, or remove the key to use your SSH agent"
            )
    if problems:
        raise ConfigError(problems)

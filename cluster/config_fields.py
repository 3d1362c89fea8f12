"""The value types of the stack's keys: each checks one value on its own and says what to write.

Pure Python (pydantic v2), no Pulumi. The sections built from them are in cluster/config_schema.py.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import ssl
import uuid
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr

_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_NAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SSH_KEY = re.compile(r"^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-[a-z0-9@.-]+) [A-Za-z0-9+/=]+( .*)?$")

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


def _strict_network(value: Any, parse: Callable[[str], Any], what: str) -> Any:
    """A CIDR with host bits set is a typo more often than not: say which network it means."""
    if isinstance(value, str):
        try:
            return parse(value)
        except ValueError:
            try:
                network = ipaddress.ip_network(value, strict=False)
            except ValueError:
                raise ValueError(f"{value!r} is not {what}") from None
            raise ValueError(f"{value!r} has host bits set: write {network}") from None
    return value


def _canonical_cidr(value: Any) -> Any:
    return _strict_network(value, IPv4Network, "an IPv4 CIDR: write one such as 203.0.113.7/32")


def _network_of_either_family(value: Any) -> Any:
    return _strict_network(value, ipaddress.ip_network, "a CIDR: write one such as 10.0.0.0/16 or fd00:10::/64")


def _address_of_either_family(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return ipaddress.ip_address(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address: write one such as 10.0.0.5 or fd00:10::5") from None
    return value


def one_or_list(value: Any) -> Any:
    """One value, or a list of one or two (a list in the stack file reaches the program as JSON text)."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("is neither one value nor a list: write one value, or [first, second]") from None
    return value if isinstance(value, (list, tuple)) else (value,)


def _one_per_family(value: tuple[Any, ...]) -> tuple[Any, ...]:
    """At most one entry of each address family: the first is the primary (dual-stack)."""
    if len(value) == 2 and value[0].version == value[1].version:
        raise ValueError(
            f"lists two IPv{value[0].version} entries ({value[0]}, {value[1]}): a second entry is the other address "
            "family (dual-stack), one IPv4 and one IPv6, the first the primary"
        )
    return value


def _list_of_text(value: Any) -> Any:
    """A list, or the installer's comma-separated string ('a,b, c')."""
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


def _nameserver(value: IPv4Address | IPv6Address) -> IPv4Address | IPv6Address:
    if value.is_loopback or value.is_unspecified or value.is_multicast:
        raise ValueError(
            f"{value} is a local address, not a DNS server the nodes can ask: write the upstream resolver "
            "(a local stub such as 127.0.0.53 forwards to it: see /run/systemd/resolve/resolv.conf)"
        )
    return value


def distinct(value: tuple[Any, ...]) -> tuple[Any, ...]:
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


def _neutron_ref(value: str) -> str:
    # A name is looked up (and must match one); an ID is taken as it is.
    if value != value.strip():
        raise ValueError(f"{value!r} has spaces around it: write the network's or subnet's ID or exact name")
    return value


def is_openstack_id(value: str) -> bool:
    """Whether `value` is written as an ID (a UUID) rather than a name."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsName = Annotated[str, AfterValidator(_dns_name)]
NonEmpty = Annotated[str, Field(min_length=1)]
OpenStackId = Annotated[str, AfterValidator(_openstack_id)]
# A Neutron network or subnet by ID or by name.
NeutronRef = Annotated[str, Field(min_length=1), AfterValidator(_neutron_ref)]
Cidr = Annotated[IPv4Network, BeforeValidator(_canonical_cidr)]
CidrList = Annotated[tuple[Cidr, ...], BeforeValidator(_list_of_text), AfterValidator(distinct)]


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

DOMAIN_TYPES = ("kvm", "qemu")


def _domain_type(value: Any) -> Any:
    if value not in DOMAIN_TYPES:
        raise ValueError(
            f"{value!r} is not a domain type: write kvm (hardware virtualisation, the default) or qemu "
            "(software emulation, far slower: for a host without usable KVM)"
        )
    return value


DomainType = Annotated[Literal["kvm", "qemu"], BeforeValidator(_domain_type)]

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


def _machine_network_size(value: IPv4Network | IPv6Network) -> IPv4Network | IPv6Network:
    # The address plan's slots need a /24's 256 addresses; an IPv6 subnet's address modes want a /64
    # (SLAAC refuses anything else), so that is the size this program plans IPv6 with.
    if value.version == 4 and value.prefixlen > 24:
        raise ValueError(f"{value} is too small: use a /24 or larger, e.g. 10.0.0.0/16")
    if value.version == 6 and value.prefixlen != 64:
        raise ValueError(f"{value} is not a /64: an IPv6 machine network is one /64, e.g. fd00:10::/64")
    return value


def _list_of_addresses(value: Any) -> Any:
    """A list, or one string: a single address or several separated by commas or spaces."""
    if isinstance(value, str):
        return tuple(item for item in re.split(r"[,\s]+", value) if item)
    return value


# A proxy's whole value, nothing after it: it reaches the nodes' environment files and
# shell-run tools, so a line break or `$(...)` must not ride along. A user or password takes
# other characters percent-encoded, as URLs do.
_PROXY_URL = re.compile(
    r"https?://(?:(?:[A-Za-z0-9._~+,=:-]|%[0-9A-Fa-f]{2})+@)?"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?/?"
)
# A domain (.example.com), an address, a CIDR or *, as the installer takes them.
_NO_PROXY_ENTRY = re.compile(r"\*|\.?[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|[0-9A-Fa-f:.]+(?:/[0-9]{1,3})?")


def _proxy_url(value: str) -> str:
    if not _PROXY_URL.fullmatch(value):
        scheme, separator, rest = value.partition("://")
        shown = f"{scheme}://***@{rest.rsplit('@', 1)[1]}" if separator and "@" in rest else value  # no password
        raise ValueError(
            f"{shown!r} is not a proxy URL: write http://host:port (or http://user:password@host:port, any character "
            "of the user or password but letters, digits and - . _ ~ + , = percent-encoded, %24 for $), nothing after it"
        )
    return value


def _no_proxy_entry(value: str) -> str:
    if not _NO_PROXY_ENTRY.fullmatch(value):
        raise ValueError(f"{value!r} is not a domain, address, CIDR or *: write e.g. .example.com or 10.0.0.0/8")
    return value


MachineNetwork = Annotated[
    IPv4Network | IPv6Network, BeforeValidator(_network_of_either_family), AfterValidator(_machine_network_size)
]
# ocp:machineNetwork: one CIDR, or one per address family (dual-stack), the primary first.
MachineNetworks = Annotated[
    tuple[MachineNetwork, ...], BeforeValidator(one_or_list), Field(min_length=1, max_length=2), AfterValidator(_one_per_family)
]
Address = Annotated[IPv4Address | IPv6Address, BeforeValidator(_address_of_either_family)]
# ocp:apiVip, ocp:ingressVip: one address, or one per family of ocp:machineNetwork, in its order.
Vips = Annotated[tuple[Address, ...], BeforeValidator(one_or_list), Field(max_length=2), AfterValidator(_one_per_family)]
# A network of either family (ocp:serviceNetwork, ocp:clusterNetwork's cidr).
AnyCidr = Annotated[IPv4Network | IPv6Network, BeforeValidator(_network_of_either_family)]
# Sources of either family: a list, or the installer's comma-separated string.
AnyCidrList = Annotated[tuple[AnyCidr, ...], BeforeValidator(_list_of_text), AfterValidator(distinct)]
ServiceNetworks = Annotated[
    tuple[AnyCidr, ...], BeforeValidator(one_or_list), Field(min_length=1, max_length=2), AfterValidator(_one_per_family)
]


PemBundle = Annotated[str, AfterValidator(_pem_bundle)]
Nameservers = Annotated[
    tuple[Annotated[IPv4Address | IPv6Address, BeforeValidator(_address_of_either_family), AfterValidator(_nameserver)], ...],
    BeforeValidator(_list_of_addresses),
    Field(min_length=1, max_length=3),
    AfterValidator(distinct),
]
SshPublicKeys = Annotated[str, AfterValidator(_ssh_public_keys)]
PullSecret = Annotated[SecretStr, AfterValidator(_pull_secret)]
TextList = Annotated[tuple[NonEmpty, ...], BeforeValidator(_list_of_text)]
ProxyUrl = Annotated[NonEmpty, AfterValidator(_proxy_url)]
NoProxy = Annotated[tuple[Annotated[NonEmpty, AfterValidator(_no_proxy_entry)], ...], BeforeValidator(_list_of_text)]
NtpServers = Annotated[
    tuple[Annotated[str, AfterValidator(_time_source)], ...],
    BeforeValidator(_list_of_text),
    Field(min_length=1, max_length=16),
    AfterValidator(distinct),
]
Tags = Annotated[
    tuple[Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_not_our_tag)], ...],
    AfterValidator(distinct),
]

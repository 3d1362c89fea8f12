"""How much of the Internet a set of sources opens a port to: measured, not spelt.

A source list is the world when what it admits of the public Internet is, not when it reads
`0.0.0.0/0`: `[0.0.0.0/1, 128.0.0.0/2, 192.0.0.0/3]` (every unicast address) or a lone
`0.0.0.0/1` is as open as `/0`. So the sources are collapsed, the space no client on the
Internet comes from is taken away (NOT_PUBLIC), and what is left is counted: more than a /8's
worth of IPv4 addresses (a /32's of IPv6 global unicast) is too wide, for every port but the
ones clients must reach from anywhere (WORLD_TCP, ICMP).

IPv6 through which IPv4 clients arrive is measured as the IPv4 it carries: a NAT64/SIIT
translator's prefix (64:ff9b::/96, the local-use 64:ff9b:1::/48) holds the IPv4 address in its
last 32 bits, so a source there is the IPv4 space it maps to (all of it where the source is wider
than the /96); Teredo (2001::/32: any IPv4 host behind any NAT) and 6to4 (2002::/16) are the world
whatever part of them a source names.

Standard library only: the config rules (cluster/config_rules_openstack.py), the preflight's
reading of the user's own security groups and the policy pack (policy/guard.py, in its own
virtualenv) all measure with this one module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, collapse_addresses, ip_network

Network = IPv4Network | IPv6Network

# What clients must reach from anywhere: the Kubernetes API and the routes (FACTS section 2).
WORLD_TCP = (6443, 80, 443)
ICMP = ("icmp", "ipv6-icmp", "icmpv6")
# Neutron takes a protocol by name or by number; a name not here (or `any`, `0`, none) is judged as every protocol.
PROTOCOLS = {"6": "tcp", "17": "udp", "1": "icmp", "58": "ipv6-icmp", "50": "esp", "51": "ah", "112": "vrrp", "47": "gre", "132": "sctp"}
KNOWN_PROTOCOLS = frozenset({*PROTOCOLS.values(), "icmpv6"})

# Space no Internet client comes from (IANA's special-purpose registries): taken away before counting.
NOT_PUBLIC = {
    4: tuple(
        IPv4Network(cidr)
        for cidr in (
            "0.0.0.0/8",  # "this network"
            "10.0.0.0/8",  # private (RFC 1918)
            "100.64.0.0/10",  # carrier-grade NAT (RFC 6598)
            "127.0.0.0/8",  # loopback
            "169.254.0.0/16",  # link-local
            "172.16.0.0/12",  # private (RFC 1918)
            "192.0.0.0/24",  # IETF protocol assignments
            "192.0.2.0/24",  # documentation (TEST-NET-1)
            "192.168.0.0/16",  # private (RFC 1918)
            "198.18.0.0/15",  # benchmarking
            "198.51.100.0/24",  # documentation (TEST-NET-2)
            "203.0.113.0/24",  # documentation (TEST-NET-3)
            "224.0.0.0/4",  # multicast
            "240.0.0.0/4",  # reserved, and the broadcast address
        )
    ),
    # Everything outside global unicast (2000::/3: loopback, ULA, link-local, multicast...), and
    # the documentation ranges inside it.
    6: tuple(
        IPv6Network(cidr)
        for cidr in ("::/3", "4000::/2", "8000::/1", "2001:db8::/32", "3fff::/20")
    ),
}
# IPv6 prefixes whose last 32 bits are an IPv4 client's address, as a translator writes them
# (RFC 6052's well-known prefix; RFC 8215's local-use one, where the operator picks the prefix
# length: the /96 form is measured, anything wider may embed any IPv4 address).
TRANSLATORS = (IPv6Network("64:ff9b::/96"), IPv6Network("64:ff9b:1::/48"))
# IPv6 tunnels of IPv4 hosts: a Teredo address stands for any IPv4 host behind any NAT, a 6to4 one for
# an IPv4 host's site; a source in either is the world (nobody names a client by them).
TUNNELS = {IPv6Network("2001::/32"): "Teredo", IPv6Network("2002::/16"): "6to4"}
IPV4_WORLD = IPv4Network("0.0.0.0/0")
# The widest public space a port other than the world's may be open to: a /8 of IPv4, a /32 of IPv6.
WIDEST_PREFIX = {4: 8, 6: 32}
WIDEST = {version: 2 ** ((32 if version == 4 else 128) - prefix) for version, prefix in WIDEST_PREFIX.items()}


def as_ipv4(source: Network) -> list[IPv4Network]:
    """The IPv4 space an IPv6 source admits clients of, through a translator or a tunnel ([] for
    none; an IPv4 source is itself)."""
    if source.version == 4:
        return [source]  # type: ignore[list-item]
    if any(source.overlaps(tunnel) for tunnel in TUNNELS):
        return [IPV4_WORLD]
    found = []
    for prefix in TRANSLATORS:
        if source.prefixlen >= 96 and source.subnet_of(prefix):
            found.append(IPv4Network((int(source.network_address) & 0xFFFFFFFF, source.prefixlen - 96)))
        elif source.overlaps(prefix):
            found.append(IPV4_WORLD)  # wider than a /96 of it: any IPv4 address may be embedded
    return found


def public_addresses(sources: Iterable[Network]) -> dict[int, int]:
    """How many public addresses the sources admit together, per IP version (4, 6); the IPv4
    clients an IPv6 source admits through a translator or tunnel count as IPv4 (as_ipv4)."""
    listed = list(sources)
    counted = {4: 0, 6: 0}
    by_version = {
        4: [ipv4 for source in listed for ipv4 in as_ipv4(source)],
        6: [source for source in listed if source.version == 6],
    }
    for version in (4, 6):
        for source in collapse_addresses(by_version[version]):
            private = sum(
                min(source.num_addresses, other.num_addresses)
                for other in NOT_PUBLIC[version]
                if source.overlaps(other)  # collapsed and aligned: one holds the other
            )
            tunnels = sum(min(source.num_addresses, other.num_addresses) for other in TUNNELS if version == 6 and source.overlaps(other))
            counted[version] += source.num_addresses - private - tunnels  # tunnels: counted as IPv4 above
    return counted


def too_wide(sources: Iterable[Network]) -> list[str]:
    """Why the sources together are the world, one phrase per IP version that is too wide ([] when none is),
    e.g. "2,092,957,696 public IPv4 addresses, more than a /8 (16,777,216)"."""
    listed = list(sources)
    counted = public_addresses(listed)
    found = []
    if counted[4] > WIDEST[4]:
        through = sorted({str(s) for s in listed if s.version == 6 and as_ipv4(s)})
        via = f" (IPv4 clients through {'; '.join(_carrier(s) for s in through)})" if through else ""
        found.append(f"{counted[4]:,} public IPv4 addresses{via}, more than a /8 ({WIDEST[4]:,})")
    if counted[6] > WIDEST[6]:
        # IPv6 counted in /32s: its addresses run to 39 digits.
        whole, rest = divmod(counted[6], WIDEST[6])
        found.append(f"{whole:,}{'+' if rest else ''} /32s of public IPv6 space, more than one /32")
    return found


def _carrier(text: str) -> str:
    """`2001::/32: Teredo`, `::/0: NAT64/SIIT, Teredo, 6to4`: how an IPv6 source carries IPv4 clients."""
    source = IPv6Network(text)
    names = ["NAT64/SIIT"] if any(source.overlaps(prefix) for prefix in TRANSLATORS) else []
    names += [name for tunnel, name in TUNNELS.items() if source.overlaps(tunnel)]
    return f"{text}: {', '.join(names)}"


def world_port(protocol: str | None, low: int, high: int) -> bool:
    """Whether every port low..high of the protocol (None: every protocol) may be open to the world."""
    if protocol in ICMP:
        return True
    return protocol == "tcp" and high - low < len(WORLD_TCP) and all(port in WORLD_TCP for port in range(low, high + 1))


def network(text: str) -> Network:
    """A source as Neutron and the stack file write it (host bits allowed)."""
    return ip_network(text, strict=False)


def protocol_name(value: object) -> str | None:
    """A rule's protocol by Neutron's name; None for every protocol (none given, `any`, `0`, or a name not known here)."""
    text = str(value or "").strip().lower()
    text = PROTOCOLS.get(text, text)
    return text if text in KNOWN_PROTOCOLS else None


@dataclass(frozen=True)
class Opening:
    """One ingress rule of a group as measured: its name, protocol (None: every), ports, source."""

    name: str
    protocol: str | None
    low: int
    high: int
    source: Network


@dataclass(frozen=True)
class WorldOpen:
    """Ports of one protocol that a group's rules, added up, open to the world; `why` says how wide."""

    names: tuple[str, ...]
    protocol: str | None
    low: int
    high: int
    sources: tuple[Network, ...]
    why: tuple[str, ...]


def world_open(openings: Iterable[Opening]) -> list[WorldOpen]:
    """Of one group's rules: for each protocol and port, the sources of every rule that admits it
    (a rule of every protocol admits them all) added up; each span of ports where they are too wide
    and the port may not be open to the world, per IP version."""
    entries = list(openings)
    found = []
    for protocol in sorted({entry.protocol for entry in entries}, key=str):
        covering = [entry for entry in entries if entry.protocol in (protocol, None)]
        bounds = sorted({entry.low for entry in covering} | {entry.high + 1 for entry in covering})
        for low, after in zip(bounds, bounds[1:]):
            if world_port(protocol, low, after - 1):
                continue
            here = [entry for entry in covering if entry.low <= low <= entry.high]
            for version in (4, 6):
                mine = [entry for entry in here if entry.source.version == version]
                why = too_wide(entry.source for entry in mine)
                if why:
                    sources = tuple(entry.source for entry in mine)
                    found.append(WorldOpen(tuple(sorted(entry.name for entry in mine)), protocol, low, after - 1, sources, tuple(why)))
    return found

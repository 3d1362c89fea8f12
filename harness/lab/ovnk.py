"""OVN-Kubernetes' host rules that decide who reaches the machine config server.

On every node it runs on, OVN-Kubernetes rejects each TCP SYN to 22623 and 22624 in the
FORWARD and OUTPUT chains (openshift/ovn-kubernetes `go-controller/pkg/node`, "Block MCS
Access": iptables `-p tcp --dport <port> --syn -j REJECT`, nftables in newer releases). OUTPUT
covers every process on the node's own network, host-network pods too: only connections
arriving from outside reach a node's MCS. The lab puts the same rules into a node's namespace
(`block_mcs`), so a check or proxy that connects to the MCS from a node fails as on a cluster.
"""

from __future__ import annotations

import subprocess

from cluster.networking import MCS_HTTP_PORT

MCS_PORTS = (22623, MCS_HTTP_PORT)
TABLE = "ovnk_block_mcs"

# `--syn` is SYN set, FIN, RST and ACK clear; REJECT answers ICMP port unreachable: the
# client sees "connection refused".
RULES = f"""table inet {TABLE} {{
    chain forward {{
        type filter hook forward priority filter; policy accept;
        tcp dport {{ {", ".join(map(str, MCS_PORTS))} }} tcp flags & (fin | syn | rst | ack) == syn reject
    }}
    chain output {{
        type filter hook output priority filter; policy accept;
        tcp dport {{ {", ".join(map(str, MCS_PORTS))} }} tcp flags & (fin | syn | rst | ack) == syn reject
    }}
}}
"""


def block_mcs(namespace: str) -> None:
    """Add the rules to the network namespace `namespace` (named, under /run/netns)."""
    subprocess.run(["ip", "netns", "exec", namespace, "nft", "-f", "-"], input=RULES, text=True, check=True, capture_output=True)

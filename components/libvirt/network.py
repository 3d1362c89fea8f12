"""Network: the NAT network the nodes live on, or an existing network/bridge adopted as is.

The created network serves the machine network with the host at the gateway address,
DHCP reservations by MAC for every node (added by each domain, see machines.py) and a
dynamic pool that is exactly the address plan's allocation pools, so neither VIP nor any
node slot is ever leased to someone else. Its dnsmasq answers the cluster domain: node
names (from the reservations), api/api-int and *.apps, for the host and as a fallback.

pulumi-libvirt has no argument for the DHCP range (it always serves the whole subnet from
the 2nd host on): the range is rewritten by an XSLT stylesheet, which the provider applies
to the network's XML before defining it (`xsltproc` must be installed where Pulumi runs).
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import pulumi
import pulumi_libvirt as libvirt

from cluster.addresses import AddressPlan
from components.libvirt.common import Attachment, ClusterContext

DHCP_RANGES_XSLT = """<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="xml" indent="yes"/>
  <!-- Everything as pulumi-libvirt wrote it... -->
  <xsl:template match="@*|node()">
    <xsl:copy>
      <xsl:apply-templates select="@*|node()"/>
    </xsl:copy>
  </xsl:template>
  <!-- ...except the IPv4 DHCP range, which the provider sets to the whole subnet: only the
       address plan's pools, so VIPs and reserved node addresses are never leased. -->
  <xsl:template match="/network/ip[not(@family) or @family='ipv4']/dhcp">
    <dhcp>
      <xsl:apply-templates select="@*"/>
{ranges}
      <xsl:apply-templates select="node()[not(self::range)]"/>
    </dhcp>
  </xsl:template>
</xsl:stylesheet>
"""


def dhcp_ranges_xslt(plan: AddressPlan) -> str:
    ranges = "\n".join(
        f"      <range start={quoteattr(str(start))} end={quoteattr(str(end))}/>" for start, end in plan.allocation_pools
    )
    return DHCP_RANGES_XSLT.format(ranges=ranges)


class Network(pulumi.ComponentResource):
    attachment: Attachment

    def __init__(self, name: str, cluster: ClusterContext, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ocp:libvirt:Network", name, None, opts)
        config, plan, settings = cluster.config, cluster.plan, cluster.libvirt
        if settings.network is not None:
            self.attachment = Attachment(network_name=settings.network)
        elif settings.bridge is not None:
            self.attachment = Attachment(bridge=settings.bridge)
        else:
            domain = config.cluster_domain
            # The host's own resolvers serve when no nameserver is given besides this dnsmasq itself.
            forwarders = [
                libvirt.NetworkDnsForwarderArgs(address=str(server))
                for server in config.nameservers
                if server != plan.gateway
            ]
            network = libvirt.Network(
                f"{name}-network",
                name=cluster.reviewed(config.cluster_name),
                mode="nat",
                domain=domain,
                addresses=[str(plan.network)],  # the host takes the first address, the plan's gateway
                autostart=True,
                dhcp=libvirt.NetworkDhcpArgs(enabled=True),
                dns=libvirt.NetworkDnsArgs(
                    enabled=True,
                    local_only=True,  # never forwards questions about the cluster domain
                    forwarders=forwarders or None,
                    hosts=[
                        libvirt.NetworkDnsHostArgs(hostname=f"{host}.{domain}", ip=str(plan.api_vip))
                        for host in ("api", "api-int")
                    ],
                ),
                # libvirt's <dns> has no wildcards; dnsmasq's address= answers *.apps and apps itself.
                dnsmasq_options=libvirt.NetworkDnsmasqOptionsArgs(
                    options=[
                        libvirt.NetworkDnsmasqOptionsOptionArgs(
                            option_name="address", option_value=f"/apps.{domain}/{plan.ingress_vip}"
                        )
                    ]
                ),
                xml=libvirt.NetworkXmlArgs(xslt=dhcp_ranges_xslt(plan)),
                # One network per name and subnet on a host: the old one must go first. Its DNS
                # forwarders (nameservers) and DHCP range (workers.maxCount) are set at install: a
                # change would replace the network under every running domain.
                # It carries every node (ocp:protect).
                opts=pulumi.ResourceOptions(
                    parent=self, delete_before_replace=True, ignore_changes=["dns", "xml"], protect=config.protect
                ),
            )
            self.attachment = Attachment(network_id=network.id)
        self.register_outputs(
            {
                "networkId": self.attachment.network_id,
                "networkName": self.attachment.network_name,
                "bridge": self.attachment.bridge,
            }
        )

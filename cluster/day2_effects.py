"""The day-2 catalogue: what a change of each stack setting does to a running cluster (refuse,
warn, apply, inert; cluster/day2.py says what each means and reviews a stack against it). Pure
Python. A test checks that every key of the config is classified here, and docs/day2.md's table
is made from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["refuse", "warn", "apply", "inert"]


@dataclass(frozen=True)
class Effect:
    kind: Kind
    # refuse: why, and what to do instead. warn: what the running cluster keeps and how to
    # change it there. apply/inert: what a change does (the day-2 table, docs/day2.md).
    text: str
    # Set where a list may change but not come or go: why setting or emptying it is refused.
    refused_when_set_or_unset: str | None = None


_NEW_CLUSTER = "create a new stack for a new cluster"
_KEEP_SIZE = "existing {role} keep the size they have; new ones get it; resize existing ones with ocp:{role}.resize"
_NEW_SERVERS = "only servers created from now on boot from it; running nodes keep theirs (RHCOS updates come from the cluster, not the image)"
_AGREE = "every node that may hold a VIP must agree on it, and running nodes keep their keepalived.conf"
_BOOTSTRAP = "applies when a bootstrap is created; a running bootstrap keeps its own"
_GROUP_LAYOUT = (
    "the running {role} are in the server groups of the layout they were made with, and Nova cannot move a server "
    "to another group (only a new server joins one): keep it as installed; a new stack gets one group per zone. "
    "With it true, a change of the {role}' availabilityZones is refused too (it would move running {role} between groups)"
)
_VOLUME_TYPES = "running {role} keep the volume types they were made with; the volumes of new {role} get their zone's type"
_VOLUME_ZONES = "running {role} keep their root volumes where they are; the volumes of new {role} are made in the new zones"
_OWN_VOLUMES = (
    "with zones this program makes each root volume as a resource of its own, without them Nova makes it with the "
    "server: switching would make unused volumes for the running {role}, or delete the volumes they boot from"
)

EFFECTS: dict[str, Effect] = {
    "platform": Effect("refuse", f"a cluster cannot move between platforms: {_NEW_CLUSTER}"),
    "clusterName": Effect("refuse", f"the name is in every certificate and DNS name of the cluster: {_NEW_CLUSTER}"),
    "baseDomain": Effect("refuse", f"the domain is in every certificate and DNS name of the cluster: {_NEW_CLUSTER}"),
    "machineNetwork": Effect("refuse", f"every node address and the subnet come from it, and a running cluster's address families never change: {_NEW_CLUSTER}"),
    "apiVip": Effect("refuse", "the API VIP is in every node's keepalived, haproxy and DNS configuration"),
    "ingressVip": Effect("refuse", "the Ingress VIP is in every node's keepalived and DNS configuration"),
    "loadBalancer": Effect(
        "refuse",
        "who holds the VIPs was decided at install: the nodes' keepalived and haproxy, or your own balancer; a change "
        "would add or remove them on running nodes, and the machine-config-operator's rendering is fixed at install",
    ),
    "masters.count": Effect("refuse", "this program does not change etcd membership"),
    "masters.serverGroupPolicy": Effect("refuse", "Nova cannot change a server group's policy: the group would be replaced under running masters"),
    "workers.serverGroupPolicy": Effect("refuse", "Nova cannot change a server group's policy: the group would be replaced under running workers"),
    "masters.serverGroupPerZone": Effect("refuse", _GROUP_LAYOUT.format(role="masters")),
    "workers.serverGroupPerZone": Effect("refuse", _GROUP_LAYOUT.format(role="workers")),
    "openstack.mode": Effect("refuse", f"the cluster was installed for one mode (cloud provider, VIP handling): {_NEW_CLUSTER}"),
    "openstack.cloud": Effect("refuse", f"every resource lives in that cloud: {_NEW_CLUSTER}"),
    "openstack.externalNetwork": Effect("refuse", "the router's gateway and every created floating IP come from it: new floating IPs would mean new addresses"),
    "openstack.existingNetwork": Effect("refuse", "every node's port is on that network"),
    "libvirt.uri": Effect("refuse", f"every domain lives on that host: {_NEW_CLUSTER}"),
    "libvirt.pool": Effect("refuse", "every disk and ignition file lives in that pool"),
    "libvirt.network": Effect("refuse", "every node's NIC is on that network"),
    "libvirt.bridge": Effect("refuse", "every node's NIC is on that bridge"),
    "libvirt.domainType": Effect(
        "refuse",
        "the provider cannot change a domain's type or CPU mode in place: every domain would be replaced, all masters "
        f"at once: {_NEW_CLUSTER}",
    ),
    "installer.generation": Effect("refuse", "a new generation means a new PKI and infra ID that the running masters do not have"),
    "networking.apiVrid": Effect("refuse", _AGREE),
    "networking.ingressVrid": Effect("refuse", _AGREE),
    "networking.advertInt": Effect("refuse", _AGREE),
    "networking.routerNodes": Effect("refuse", "where the routers run and the Ingress VIP may sit was decided at install"),
    "sshKey": Effect("warn", "the cluster keeps the keys it was installed with, new nodes too (they get them from the cluster). Change them with `oc edit machineconfig 99-master-ssh` and `99-worker-ssh`"),
    "pullSecret": Effect("warn", "the cluster keeps the pull secret it was installed with. Change it with `oc set data secret/pull-secret -n openshift-config --from-file=.dockerconfigjson=pull-secret.json`"),
    "proxy": Effect("warn", "the cluster keeps the proxy it was installed with. Change it with `oc edit proxy/cluster`"),
    "additionalTrustBundle": Effect("warn", "the cluster keeps the CAs it was installed with. Change them in the ConfigMap user-ca-bundle (namespace openshift-config) and `oc edit proxy/cluster` (spec.trustedCA)"),
    "nameservers": Effect("warn", "the OpenStack subnet's DHCP gets the new ones (integrated mode: nodes take them as their leases renew). Standalone and libvirt: running nodes keep their CoreDNS upstreams, new nodes get the new ones (a libvirt network keeps its forwarders: `virsh net-edit`); change /etc/coredns/Corefile on running nodes with a MachineConfig"),
    "masters.flavor": Effect("warn", _KEEP_SIZE.format(role="masters")),
    "masters.vcpus": Effect("warn", _KEEP_SIZE.format(role="masters")),
    "masters.memoryMib": Effect("warn", _KEEP_SIZE.format(role="masters")),
    "masters.diskGib": Effect("warn", "running masters keep their disks; only new disks get the size"),
    "masters.image": Effect("warn", _NEW_SERVERS),
    "masters.rootVolume": Effect("warn", "running masters keep their root volumes; only new servers get it"),
    "masters.rootVolume.types": Effect("warn", _VOLUME_TYPES.format(role="masters")),
    "masters.rootVolume.availabilityZones": Effect("warn", _VOLUME_ZONES.format(role="masters"), _OWN_VOLUMES.format(role="masters")),
    "masters.availabilityZones": Effect("warn", "running masters stay where they are; only new servers are placed by it"),
    "masters.resize": Effect("apply", "the listed master (one at a time) takes masters.flavor / vcpus / memoryMib: one reboot"),
    "workers.count": Effect(
        "apply",
        "adds or removes workers (the highest slots first; each is drained and its Node deleted before its server "
        "goes, see Day 2); nothing else changes. Fewer router nodes than the "
        "routers set at install warns, with the `oc patch` that lowers them; 0 is refused when the routers run on workers",
    ),
    "workers.maxCount": Effect("warn", "running nodes keep the DNS names and addresses reserved at install; workers beyond the old maxCount are not in their CoreDNS hosts"),
    "workers.flavor": Effect("warn", _KEEP_SIZE.format(role="workers")),
    "workers.vcpus": Effect("warn", _KEEP_SIZE.format(role="workers")),
    "workers.memoryMib": Effect("warn", _KEEP_SIZE.format(role="workers")),
    "workers.diskGib": Effect("warn", "running workers keep their disks; new workers get the size"),
    "workers.image": Effect("warn", _NEW_SERVERS),
    "workers.rootVolume": Effect("warn", "running workers keep their root volumes; new workers get it"),
    "workers.rootVolume.types": Effect("warn", _VOLUME_TYPES.format(role="workers")),
    "workers.rootVolume.availabilityZones": Effect("warn", _VOLUME_ZONES.format(role="workers"), _OWN_VOLUMES.format(role="workers")),
    "workers.availabilityZones": Effect("warn", "running workers stay where they are; new workers are placed by it"),
    "workers.serverGroupSize": Effect(
        "apply",
        "workers from then on go into server groups of at most this many (<infraID>-worker, -worker-1, ...); the "
        "preflight refuses a value under which a running worker would change group (Nova would replace it)",
    ),
    "workers.resize": Effect("apply", "the listed workers take workers.flavor / vcpus / memoryMib: one reboot each"),
    "bootstrap.enabled": Effect("apply", "false removes the bootstrap and where its config is served from (its Glance image, or its helper); true creates them (refused when the configs are too old)"),
    # Checked in review(): refused only while bootstrap.enabled is true.
    "bootstrap.configSource": Effect(
        "inert",
        "refused while bootstrap.enabled is true: the bootstrap fetches its config from where the install put it, and "
        "a change would delete that under it (a bootstrap made again uses it too); not read while false. A stack "
        "installed before the key existed used the helper: write configSource: helper",
    ),
    "bootstrap.credential": Effect(
        "apply",
        "the running bootstrap keeps the token it booted with (its user_data is read at first boot only); userToken "
        "deletes the bootstrap's application credential, which revokes its tokens, and is warned on every run; "
        "applicationCredential makes one for a bootstrap made later",
    ),
    "bootstrap.allowHttpImageEndpoint": Effect(
        "inert", "only decides whether the catalog's image endpoint may be plain http for the bootstrap's fetch; nothing in the cloud changes"
    ),
    "bootstrap.allowHttpIdentityEndpoint": Effect(
        "inert",
        "only decides whether the identity endpoint (the catalog's, and the clouds.yaml auth_url) may be plain http where "
        "the bootstrap's credential is made and its token asked for; nothing in the cloud changes",
    ),
    "bootstrap.flavor": Effect("warn", _BOOTSTRAP),
    "bootstrap.image": Effect("warn", _BOOTSTRAP),
    "bootstrap.helper": Effect("warn", _BOOTSTRAP),
    "openstack.apiFloatingIp": Effect("apply", "creates, associates or releases the API floating IP"),
    "openstack.ingressFloatingIp": Effect("apply", "creates, associates or releases the Ingress floating IP"),
    "openstack.sshAllowedCidr": Effect("apply", "replaces the helper's and the bootstrap's SSH rules; nodes are untouched"),
    "openstack.apiAllowedCidrs": Effect("apply", "adds or removes one 6443 rule per source on the master group; nodes are untouched"),
    "openstack.ingressAllowedCidrs": Effect("apply", "adds or removes the 80/443 rules of each source on the router nodes' group; nodes are untouched"),
    "openstack.nodePortAllowedCidrs": Effect("apply", "adds or removes the NodePort rules of each source on both node groups; nodes are untouched"),
    "libvirt.image": Effect("warn", "every disk stands on the image uploaded at install, new ones too; RHCOS updates come from the cluster"),
    "tags": Effect("apply", "updates the tags in place"),
    "protect": Effect(
        "apply",
        "only the protect flag of the masters (servers, libvirt disks, ports, root volumes), the network, subnet and "
        "router and the installer's record changes: nothing is updated or replaced. Lower it to false before a "
        "deliberate `pulumi destroy`, which refuses while it is true",
    ),
    "networking": Effect(
        "warn",
        "standalone mode and libvirt (integrated mode refuses these keys but routerNodes: the machine-config-operator "
        "runs the VIPs): running nodes keep the files they were installed with; new nodes get the new value. Change it "
        "on running nodes with a MachineConfig. Masters installed while haproxy fronted the machine config server "
        "(haproxyMcsPort) keep redirecting `<API VIP>:22624` to it, which OVN-Kubernetes breaks: no worker added later "
        "boots until they get this version's files (docs/networking.md says how)",
    ),
    "clusterNetwork": Effect("refuse", "every pod address comes from it: a running cluster's network cannot be re-addressed this way"),
    "serviceNetwork": Effect("refuse", "every service address comes from it: a running cluster's network cannot be re-addressed this way"),
    "ntpServers": Effect(
        "warn",
        "the MachineConfigs 99-master-chrony and 99-worker-chrony were made at install, and new nodes get them from "
        "the cluster: change the servers with `oc edit machineconfig 99-master-chrony` and `99-worker-chrony` (the "
        "MCO rewrites /etc/chrony.conf, one node at a time, each rebooted); a bootstrap made again gets the new ones",
    ),
    "fips": Effect("refuse", f"FIPS mode is chosen at install and cannot be switched on a running cluster: {_NEW_CLUSTER}"),
    "capabilities": Effect("warn", "the cluster keeps the capabilities it was installed with. Enable more with `oc patch clusterversion version --type merge -p '{\"spec\":{\"capabilities\":{\"additionalEnabledCapabilities\":[...]}}}'` (none can be disabled)"),
    "imageDigestSources": Effect("warn", "the cluster keeps the mirrors it was installed with. Change them with an ImageDigestMirrorSet (`oc apply -f`)"),
    "openstack.caBundle": Effect("warn", "the cluster keeps the CA it was installed with. Change it in the ConfigMap cloud-provider-config (namespace openshift-config, key ca-bundle.pem) and user-ca-bundle"),
    "openstack.additionalNetworkIds": Effect("warn", "running servers keep their networks (a change would replace them); each node gets a port on a network added, which a server made from now on boots with; removing one that was there at install is refused (its ports would be taken from the running servers)"),
    "openstack.additionalNetworks": Effect(
        "warn",
        "running servers keep their networks (a change would replace them); each node of the pools named gets a port "
        "on a network added (or a pool added to one), which a server made from now on boots with. New networks go at "
        "the end of the list; removing one that was there at install, a pool from it, reordering them, or changing "
        "its portSecurity, vnicType, profile or securityGroups is refused (its ports would be taken from the running servers), "
        "but for the masters of a network without port security: pools without masters, written, deletes their ports "
        "there (Nova unplugs them, nothing reboots); left unset, the run stops and says so",
    ),
    "openstack.additionalNetworks.profile": Effect(
        "refuse",
        "the running servers' ports were bound with it: Nova keeps the VF's PCI address in the binding profile, and "
        "Neutron lets only its service role change it; an entry with another profile is a new network at the end",
    ),
    "masters.additionalSecurityGroupIds": Effect("apply", "adds or removes the groups on every master's ports, in place, beside the port's own list; nodes are untouched"),
    "workers.additionalSecurityGroupIds": Effect("apply", "adds or removes the groups on every worker's ports, in place, beside the port's own list; nodes are untouched"),
    "openstack.skipPreflight": Effect("inert", "only decides whether this run checks the cloud first; nothing in the cloud changes"),
    "openstack.additionalSecurityGroupIds": Effect("apply", "adds or removes the groups on every node's port, in place, beside the port's own list: the groups the cluster attached (the cloud controller manager's lb-sg-*) stay; nodes are untouched"),
    "installer.binary": Effect("inert", "the installer already ran; used again only for a new generation"),
    "installer.oc": Effect(
        "apply",
        "the installer already ran (again only for a new generation); the oc that drains a worker before its server "
        "goes (each worker's drain command takes it in place, running nothing); integrated: reads the pointer of "
        "workers and masters made once the bootstrap is gone",
    ),
    "installer.extraManifests": Effect(
        "warn",
        "the installer already consumed them (install time only): the cluster keeps what they made. Apply changes "
        "with `oc apply -f` (MachineConfigs roll out one node at a time, each rebooted)",
    ),
    "installer.cloudProviderConfig": Effect(
        "warn",
        "merged into the cloud provider's config at install only: the running cluster keeps its own. Change it there: "
        "`oc edit cm cloud-provider-config -n openshift-config` (docs/day2.md, \"The cloud provider's config\")",
    ),
    "installer.dir": Effect("inert", "the installer already ran; its files stay where they are"),
    "installer.assetsDir": Effect("inert", "the configs are read on every run and must stay those of this cluster"),
    "bootstrap.helper.floatingIp": Effect(
        "apply",
        "creates or releases the bootstrap's floating IP (and its helper's); unset, it is false on a network given without "
        "a router (existingNetwork, router false), true otherwise: a stack installed when unset meant true there is "
        "refused while its bootstrap exists, until it says which",
    ),
    "workers.readyTimeout": Effect(
        "inert", "only how long `python -m ocp install` waits for the workers to be Ready; nothing in the cloud changes"
    ),
    "masters.etcdDisk": Effect(
        "refuse",
        "etcd goes to the masters' local disk at install only: their MachineConfig is rendered into their first boot and "
        "their block devices are first-boot inputs, and moving a running member's data is not this program's to do "
        "(the installer's day-2 guide, docs/user/openstack/etcd-ephemeral-disk.md in openshift/installer, rolls the "
        f"masters through a ControlPlaneMachineSet, which a cluster of this program's masters has not): {_NEW_CLUSTER}",
    ),
}


def effect_of(key: str) -> Effect | None:
    """The effect of the most specific classified key that `key` is or lies under."""
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        found = EFFECTS.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None

"""The destroy cleanup's work (cluster/cleanup.py says what and why), with openstacksdk:
`OS_CLOUD=... INFRA_ID=... python -m cluster.cleanup_run`, as the cleanup command's delete runs it.

Order: the floating IPs of the cluster's load balancers, then the load balancers (cascade:
listeners, pools, VIP ports); servers, waited for (their volumes detach, their ports go); trunks;
volume snapshots; volumes, retried while Cinder refuses them (still detaching); shares; EgressIP
ports and any other port left on the cluster's network (a port whose delete fails loses its
trunk first); server groups; `lb-sg-*` groups (taken off the ports still holding them); images;
containers. Each step goes on whatever the one before met; what is left is named at the end
and the exit status is 1, so the command stays in the state and a second `pulumi destroy`
finishes. Prints IDs only.

`OCP_CLEANUP_STEP=mark` runs the tagging alone (`mark`), as the command deleted before the servers does:
what of the project serves the cluster's servers but names nothing of the cluster gets the cluster's tag.
What it cannot tag it names; it never fails the destroy (the cleanup marks again before it deletes).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable

from cluster import cleanup as rules

WAIT = 600  # seconds a load balancer or server may take to go


class Cleanup:
    def __init__(self, conn, infra_id: str, sleep: Callable[[float], None] = time.sleep):
        self.conn, self.infra, self.sleep = conn, infra_id, sleep
        self.tag = rules.tag(infra_id)
        self.left: list[str] = []

    def say(self, message: str) -> None:
        print(f"cleanup: {message}", flush=True)

    def attempt(self, what: str, action: Callable[[], object], done: str = "deleted") -> bool:
        try:
            action()
            self.say(f"{done} {what}")
            return True
        except Exception as error:  # noqa: BLE001 - every failure is named and the run goes on
            self.left.append(f"{what}: {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}")
            return False

    def listing(self, what: str, items: Callable[[], object]) -> list:
        try:
            return list(items())
        except Exception as error:  # noqa: BLE001
            self.left.append(f"could not list {what}: {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}")
            return []

    def mark(self) -> int:
        """Tags, with the cluster's tag, what in this project serves the cluster's servers that exist now
        (Pulumi's and the Machine API's, by tag or metadata) but names nothing of the cluster: EgressIP
        reservations held for them, 4.14/4.15 Service load balancers with a member at their addresses, and
        `lb-sg-*` groups on their ports. Nothing is deleted here, and nothing of another project is looked at."""
        network = self.conn.network
        project = self.conn.current_project_id
        servers = {
            s.id for s in self.listing("servers", self.conn.compute.servers)
            if self.tag in (s.tags or []) or (s.metadata or {}).get(rules.CLUSTER_KEY) == self.infra
        }
        node_ports = [p for p in self.listing("ports", network.ports) if p.device_id in servers and p.project_id == project] if servers else []
        addresses = {(ip["subnet_id"], ip["ip_address"]) for port in node_ports for ip in port.fixed_ips or []}
        marked = 0
        for port in self.listing("ports", lambda: network.ports(device_owner=rules.EGRESS_IP_OWNER)):
            if port.project_id == project and rules.reserved_for(port.device_owner, port.device_id, servers) and self.tag not in (port.tags or []):
                marked += self.attempt(f"EgressIP port {port.id}", lambda port=port: network.add_tag(port, self.tag), "tagged")
        if addresses and self.conn.has_service("load-balancer"):
            balancer = self.conn.load_balancer
            for lb in self.listing("load balancers", balancer.load_balancers):
                if lb.project_id != project or not rules.legacy_service_load_balancer(lb.description) or self.tag in (lb.tags or []):
                    continue
                members = [(m.subnet_id, m.address) for pool in lb.pools or [] for m in self.listing("members", lambda pool=pool: balancer.members(pool["id"]))]
                if rules.serves(members, addresses):
                    def tag_balancer(lb=lb):
                        if (lb.provisioning_status or "").startswith("PENDING_"):  # Octavia refuses an update mid-change
                            lb = balancer.wait_for_load_balancer(lb.id, status="ACTIVE", failures=["ERROR"], interval=2, wait=WAIT)
                        balancer.update_load_balancer(lb, tags=[*(lb.tags or []), self.tag])
                    marked += self.attempt(f"load balancer {lb.id}", tag_balancer, "tagged")
        for group_id in sorted({group for port in node_ports for group in port.security_group_ids or []}):
            group = self.listing("security group", lambda group_id=group_id: [network.get_security_group(group_id)])
            if group and (group[0].name or "").startswith("lb-sg-") and self.tag not in (group[0].tags or []):
                marked += self.attempt(f"security group {group_id}", lambda group=group[0]: network.add_tag(group, self.tag), "tagged")
        if self.left:
            print(f"cleanup: could not tag all that serves the cluster {self.infra}; the cleanup will leave these:", file=sys.stderr)
            for what in self.left:
                print(f"cleanup:   {what}", file=sys.stderr)
            self.left = []
        return marked

    def run(self) -> int:
        network = self.conn.network
        # First what the Machine API's servers (still there) are served by; Pulumi's were marked before they went.
        self.mark()
        self.networks = {n.id for n in self.listing("networks", network.networks) if self.tag in (n.tags or []) or n.name == f"{self.infra}-openshift"}
        self.ports_on_network = [p for p in self.listing("ports", network.ports) if p.network_id in self.networks]
        # Groups on the cluster's ports now, before Pulumi deletes them (the 4.14/4.15 `lb-sg-*` groups name no infra ID).
        self.groups_on_ports = {group for port in self.ports_on_network for group in port.security_group_ids or []}
        self.services: set[str] = set()
        for step in (self.load_balancers, self.servers, self.trunks, self.snapshots, self.volumes, self.shares, self.ports,
                     self.server_groups, self.service_groups, self.images, self.containers):
            step()
        if self.left:
            print(f"cleanup: could not remove all that the cluster {self.infra} made (run `pulumi destroy` again):", file=sys.stderr)
            for what in self.left:
                print(f"cleanup:   {what}", file=sys.stderr)
            return 1
        return 0

    def load_balancers(self) -> None:
        if not self.conn.has_service("load-balancer"):
            return
        balancer = self.conn.load_balancer
        found = [lb for lb in self.listing("load balancers", balancer.load_balancers)
                 if rules.service_load_balancer(self.infra, lb.name, lb.description, lb.vip_network_id, self.networks, lb.tags or [])]
        deleting = []
        for lb in found:
            if service := rules.service_of(lb.description):
                self.services.add(service)
            for ip in self.listing("floating IPs", lambda lb=lb: self.conn.network.ips(port_id=lb.vip_port_id)) if lb.vip_port_id else []:
                self.attempt(f"floating IP {ip.id} of load balancer {lb.id}", lambda ip=ip: self.conn.network.delete_ip(ip))
            if (lb.provisioning_status or "").startswith("PENDING_"):  # Octavia refuses to delete it mid-change
                try:
                    balancer.wait_for_load_balancer(lb.id, status="ACTIVE", failures=["ERROR"], interval=2, wait=WAIT)
                except Exception:  # noqa: BLE001 - ERROR can be deleted; a timeout is met by the delete below
                    pass
            if self.attempt(f"load balancer {lb.id}", lambda lb=lb: balancer.delete_load_balancer(lb, cascade=True)):
                deleting.append(lb)
        for lb in deleting:
            try:
                balancer.wait_for_delete(lb, interval=2, wait=WAIT)
            except Exception as error:  # noqa: BLE001
                self.left.append(f"load balancer {lb.id} did not go: {type(error).__name__}")

    def servers(self) -> None:
        compute = self.conn.compute
        found = [s for s in self.listing("servers", compute.servers) if rules.machine(self.infra, s.name, s.tags or [], s.metadata)]
        found = [server for server in found if self.attempt(f"server {server.id}", lambda server=server: compute.delete_server(server))]
        for server in found:
            try:
                compute.wait_for_delete(server, interval=2, wait=WAIT)
            except Exception as error:  # noqa: BLE001
                self.left.append(f"server {server.id} did not go: {type(error).__name__}")

    def trunks(self) -> None:
        if not self.conn.network.find_extension("trunk"):
            return
        on_network = {p.id for p in self.ports_on_network}
        for trunk in self.listing("trunks", self.conn.network.trunks):
            if self.tag in (trunk.tags or []) or trunk.port_id in on_network:
                self.attempt(f"trunk {trunk.id}", lambda trunk=trunk: self.conn.network.delete_trunk(trunk))

    def snapshots(self) -> None:
        storage = self.conn.block_storage
        found = [s for s in self.listing("volume snapshots", lambda: storage.snapshots(details=True)) if rules.csi_owned(self.infra, s.metadata)]
        found = [snapshot for snapshot in found if self.attempt(f"volume snapshot {snapshot.id}", lambda snapshot=snapshot: storage.delete_snapshot(snapshot))]
        for snapshot in found:  # a volume's delete is refused while it has snapshots
            try:
                storage.wait_for_delete(snapshot, interval=2, wait=WAIT)
            except Exception as error:  # noqa: BLE001
                self.left.append(f"volume snapshot {snapshot.id} did not go: {type(error).__name__}")

    def volumes(self) -> None:
        """A plain delete (Cinder's default policy keeps force-delete for admins), retried with backoff
        while Cinder refuses it: a volume still detaching from a server just deleted."""
        storage = self.conn.block_storage
        pending = {v.id: v for v in self.listing("volumes", lambda: storage.volumes(details=True)) if rules.csi_owned(self.infra, v.metadata)}
        errors: dict[str, str] = {}
        deleted = []
        for pause in (0, *rules.volume_retries(os.environ.get("OCP_CLEANUP_VOLUME_PATIENCE"))):
            if not pending:
                break
            if pause:
                self.say(f"{len(pending)} volume(s) not deletable yet ({', '.join(sorted(set(errors.values())))}): again in {pause} s")
                self.sleep(pause)
            for volume_id in list(pending):
                try:
                    storage.delete_volume(volume_id)
                    self.say(f"deleted volume {volume_id}")
                    deleted.append(pending.pop(volume_id))
                except Exception as error:  # noqa: BLE001
                    if type(error).__name__ == "NotFoundException":
                        del pending[volume_id]
                    else:
                        errors[volume_id] = type(error).__name__
        self.left += [f"volume {volume_id}: {errors.get(volume_id, '')}" for volume_id in pending]
        for volume in deleted:  # accepted; gone once Cinder's volume service has done it
            try:
                storage.wait_for_delete(volume, interval=2, wait=WAIT)
            except Exception as error:  # noqa: BLE001
                self.left.append(f"volume {volume.id} did not go: {type(error).__name__}")

    def shares(self) -> None:
        if not self.conn.has_service("shared-file-system"):
            return
        files = self.conn.shared_file_system
        found = [s for s in self.listing("shares", files.shares) if rules.csi_owned(self.infra, s.metadata, rules.MANILA_CSI_CLUSTER)]
        for share in found:
            for snapshot in self.listing("share snapshots", lambda share=share: files.share_snapshots(share_id=share.id)):
                def delete_snapshot(snapshot=snapshot):  # a share's delete is refused while it has snapshots
                    files.delete_share_snapshot(snapshot)
                    files.wait_for_delete(snapshot, interval=2, wait=WAIT)
                self.attempt(f"share snapshot {snapshot.id}", delete_snapshot)
            self.attempt(f"share {share.id}", lambda share=share: files.delete_share(share))

    def ports(self) -> None:
        network = self.conn.network
        tagged = [p for p in self.listing("ports", lambda: network.ports(tags=self.tag)) if not rules.ours(self.infra, p.name)]
        on_network = [p for p in self.listing("ports", network.ports) if p.network_id in self.networks]
        egress = [p for p in on_network if p.device_owner == rules.EGRESS_IP_OWNER]
        others = [p for p in on_network if p.device_owner != rules.EGRESS_IP_OWNER and rules.leftover_port(self.infra, p.name, p.device_owner)]
        seen: set[str] = set()
        for port in [*egress, *tagged, *others]:
            if port.id in seen:
                continue
            seen.add(port.id)
            try:
                network.delete_port(port)
                self.say(f"deleted port {port.id}")
            except Exception:  # noqa: BLE001 - a trunk's parent refuses (409): the trunk first, then again
                for trunk in self.listing("trunks", lambda port=port: network.trunks(port_id=port.id)):
                    self.attempt(f"trunk {trunk.id} of port {port.id}", lambda trunk=trunk: network.delete_trunk(trunk))
                self.attempt(f"port {port.id}", lambda port=port: network.delete_port(port))

    def server_groups(self) -> None:
        compute = self.conn.compute
        own = json.loads(os.environ.get(rules.OWN_GROUP_ZONES) or "{}")  # the program's per-zone groups: Pulumi deletes them
        groups = [
            g for g in self.listing("server groups", compute.server_groups)
            if (g.name or "").startswith(f"{self.infra}-") and not rules.own_server_group(self.infra, g.name, own)
        ]
        zones = {zone.name for zone in self.listing("availability zones", compute.availability_zones)} if groups else set()
        for group in groups:
            if rules.machine_server_group(self.infra, group.name, group.member_ids or [], zones, own):
                self.attempt(f"server group {group.id}", lambda group=group: compute.delete_server_group(group))
            else:  # Nova has no tags for groups: a name alone does not make it the cluster's
                self.say(f"kept server group {group.id}: named by the infra ID but not as the installer's MachineSets name theirs, or it has members; delete it if it was the cluster's")

    def service_groups(self) -> None:
        network = self.conn.network
        for group in self.listing("security groups", network.security_groups):
            if not rules.service_group(self.infra, group.name, group.description, group.id, self.groups_on_ports, self.services, group.tags or []):
                continue
            holding = self.listing("ports", lambda group=group: network.ports(security_groups=[group.id]))
            if not rules.service_group(self.infra, group.name, group.description, group.id, set(), set(), group.tags or []) and [
                port for port in holding if self.tag not in (port.tags or [])
            ]:  # a 4.14/4.15 group known by its Service's name only, on a port not the cluster's: another cluster's
                self.say(f"kept security group {group.id}: described as another cluster's Service's too, and on ports not this cluster's")
                continue
            # Pulumi's node ports may still hold it (they go in the same destroy): off them first.
            for port in holding:
                kept = [g for g in port.security_group_ids if g != group.id]
                self.attempt(f"group {group.id} from port {port.id}", lambda port=port, kept=kept: network.update_port(port, security_groups=kept))
            self.attempt(f"security group {group.id}", lambda group=group: network.delete_security_group(group))

    def images(self) -> None:
        for image in self.listing("images", lambda: self.conn.image.images(tag=self.tag)):
            self.attempt(f"image {image.id}", lambda image=image: self.conn.image.delete_image(image))

    def containers(self) -> None:
        if not self.conn.has_service("object-store"):
            return
        store = self.conn.object_store
        for container in self.listing("containers", lambda: store.containers(prefix=f"{self.infra}-image-registry-")):
            def empty_and_delete(container=container):
                for item in store.objects(container.name):
                    store.delete_object(item, container=container.name)
                store.delete_container(container)
            self.attempt(f"container {container.name}", empty_and_delete)


def main() -> int:
    import openstack  # the program's venv has it (requirements.txt); imported here so the rules above need none

    infra = os.environ["INFRA_ID"]
    try:
        conn = openstack.connect(cloud=os.environ["OS_CLOUD"])
        conn.authorize()
    except Exception as error:  # noqa: BLE001
        print(f"cleanup: could not reach the cloud {os.environ['OS_CLOUD']}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    cleanup = Cleanup(conn, infra)
    if os.environ.get(rules.STEP) == rules.MARK:
        cleanup.say(f"tagged {cleanup.mark()} resource(s) that serve the cluster's servers")
        return 0
    return cleanup.run()


if __name__ == "__main__":
    sys.exit(main())

"""Octavia's network driver for the worker of a cloud with no amphorae.

Octavia's `amphora` provider with its no-op amphora and compute drivers takes a load balancer
through the real flows to ACTIVE without booting anything. The API process keeps Neutron's real
driver (allowed_address_pairs_driver): it makes the VIP port in Neutron (`octavia-lb-<id>`,
device_owner `Octavia`, in the load balancer's project), as on a real cloud. The worker's
no-op network driver would then plug nothing, which is right here (no amphora to plug), but
would also leave that port behind on delete; this one hands the VIP's release to the real
driver, which deletes the port it made.
"""

from octavia.network.drivers.neutron.allowed_address_pairs import AllowedAddressPairsDriver
from octavia.network.drivers.noop_driver.driver import NoopNetworkDriver


class VipPortsInNeutron(NoopNetworkDriver):
    def __init__(self):
        super().__init__()
        self._neutron = None

    @property
    def neutron(self):
        if self._neutron is None:  # Neutron answers by the time the first load balancer goes
            self._neutron = AllowedAddressPairsDriver()
        return self._neutron

    def deallocate_vip(self, vip):
        self.neutron.deallocate_vip(vip)

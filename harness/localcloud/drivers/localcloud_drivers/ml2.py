"""An ML2 mechanism driver for a cloud with no agents.

Every driver in the neutron wheel binds a port only on a host where its agent (OVS, OVN,
SR-IOV, ...) has reported, so with none Nova fails with PortBindingFailed. This one binds the
first segment offered on any host, as an OVS port would be bound, and marks the port ACTIVE,
so Neutron sends Nova the usual `network-vif-plugged` event. Nothing is plugged anywhere.
It also brings its trunk driver (trunk.py), as ML2/OVN does, before the trunk plugin loads.
"""

from neutron_lib import constants
from neutron_lib.api.definitions import portbindings
from neutron_lib.plugins.ml2 import api

from localcloud_drivers import trunk


class BindAnywhere(api.MechanismDriver):
    def initialize(self):
        self.trunks = trunk.AgentlessTrunks.create()

    @property
    def connectivity(self):
        return portbindings.CONNECTIVITY_L2

    def bind_port(self, context):
        for segment in context.segments_to_bind:
            context.set_binding(
                segment[api.ID],
                portbindings.VIF_TYPE_OVS,
                {portbindings.CAP_PORT_FILTER: True},
                status=constants.PORT_STATUS_ACTIVE,
            )
            return

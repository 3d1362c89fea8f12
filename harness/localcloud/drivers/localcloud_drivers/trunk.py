"""A trunk driver for the agent-less ML2 driver (ml2.BindAnywhere).

Neutron's trunk service plugin refuses to start unless a loaded driver claims trunks
(IncompatibleTrunkPluginConfiguration); the wheel's drivers claim them only for the OVS and
OVN mechanism drivers. This one does for `localcloud`: VLAN subports, trunks on bound parent
ports (Nova boots a server on a trunk's parent, as the installer's MachineSets ask), and the
trunk ACTIVE once made or changed, as ML2/OVN moves it (nothing is wired anywhere).
"""

from neutron_lib.api.definitions import portbindings
from neutron_lib.callbacks import events, registry, resources
from neutron_lib.services.trunk import constants as trunk_constants
from oslo_config import cfg

from neutron.services.trunk.drivers import base

NAME = "localcloud"


class AgentlessTrunks(base.DriverBase):
    @property
    def is_loaded(self):
        try:
            return NAME in cfg.CONF.ml2.mechanism_drivers
        except cfg.NoSuchOptError:
            return False

    @registry.receives(resources.TRUNK_PLUGIN, [events.AFTER_INIT])
    def register(self, resource, event, trigger, payload=None):
        super().register(resource, event, trigger, payload=payload)
        for what in (resources.TRUNK, resources.SUBPORTS):
            registry.subscribe(self._active, what, events.AFTER_CREATE)
        registry.subscribe(self._active, resources.SUBPORTS, events.AFTER_DELETE)

    @staticmethod
    def _active(resource, event, trigger, payload=None):
        payload.states[-1].update(status=trunk_constants.TRUNK_ACTIVE_STATUS)

    @classmethod
    def create(cls):
        return cls(NAME, (portbindings.VIF_TYPE_OVS,), (trunk_constants.SEGMENTATION_TYPE_VLAN,), agent_type=None, can_trunk_bound_port=True)

"""The services' configuration, rendered into <home>/etc with this home's paths and password.

What each setting is for is said where it is not the service's default for an ordinary reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.localcloud.layout import ADMIN_CLOUD, CLOUD, HOST, PORTS, PROJECTS, REGION, TENANT_USER, Layout, url

# One compute host per compute zone the mock cloud describes (samples/cloud/dev.yaml
# computeZones): a zone is the zone of its hosts. `nova` is Nova's default zone.
COMPUTE_HOSTS = {"nova": "localcloud-compute", "az1": "localcloud-compute-az1", "az2": "localcloud-compute-az2"}
# One Cinder backend per volume zone (samples/cloud/dev.yaml volumeZones).
VOLUME_BACKENDS = {"nova": "fake", "storage-1": "fake-storage-1", "storage-2": "fake-storage-2"}

# How long each service's keystonemiddleware trusts a token it validated (its default: 300 s). A
# revoked token still opens the service for that long; the tests wait it out (the bootstrap's
# token after its teardown), so it is short here.
TOKEN_CACHE_TIME = 20
# bcrypt's cost for the passwords and application-credential secrets Keystone stores (its default:
# 12, about 0.3 s of CPU per authentication). Every `pulumi` run, plugin and SDK call here
# authenticates on the same 2 cores as the tests: the cheapest cost bcrypt takes.
PASSWORD_HASH_ROUNDS = 4

RABBIT = f"rabbit://guest:guest@{HOST}:{PORTS['rabbitmq']}/"  # guest may connect from loopback only
DATABASES = ("keystone", "placement", "glance", "neutron", "nova_api", "nova", "nova_cell0", "cinder", "octavia", "manila")
SERVICE_USERS = ("glance", "placement", "nova", "neutron", "cinder", "octavia", "manila", "swift")
# Swift's storage servers, each with its ring's port (layout.PORTS).
SWIFT_SERVERS = ("account", "container", "object")


def database(layout: Layout, name: str) -> str:
    return f"mysql+pymysql://openstack:{layout.password()}@{HOST}:{PORTS['mariadb']}/{name}"


def _auth(layout: Layout, user: str) -> str:
    return f"""auth_url = {url("keystone")}
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = {user}
password = {layout.password()}
region_name = {REGION}
"""


def _authtoken(layout: Layout, user: str, service_type: str) -> str:
    # service_type: keystonemiddleware checks an application credential's access rules against it,
    # and refuses every token that carries rules where it is unset (a restricted token gets 401).
    return f"""[keystone_authtoken]
www_authenticate_uri = {url("keystone")}
service_token_roles_required = true
service_type = {service_type}
token_cache_time = {TOKEN_CACHE_TIME}
{_auth(layout, user)}"""


def _common(layout: Layout, service: str) -> str:
    """The sections every service shares, then its own [DEFAULT] settings follow."""
    return f"""[oslo_concurrency]
lock_path = {layout.data / service / "lock"}

[oslo_messaging_notifications]
driver = noop

[DEFAULT]
debug = false
use_stderr = true
state_path = {layout.data / service}
transport_url = {RABBIT}"""


def keystone(layout: Layout) -> str:
    return f"""[DEFAULT]
use_stderr = true

[database]
connection = {database(layout, "keystone")}

[token]
provider = fernet

[identity]
password_hash_rounds = {PASSWORD_HASH_ROUNDS}

# Keystone's own cache (roles, catalog, validated tokens), as real deployments run it with memcached:
# here in the memory of its one worker process.
[cache]
enabled = true
backend = dogpile.cache.memory

[fernet_tokens]
key_repository = {layout.data / "keystone" / "fernet-keys"}

[credential]
key_repository = {layout.data / "keystone" / "credential-keys"}
"""


def placement(layout: Layout) -> str:
    return f"""[DEFAULT]
use_stderr = true

[placement_database]
connection = {database(layout, "placement")}

[api]
auth_strategy = keystone

{_authtoken(layout, "placement", "placement")}"""


def glance(layout: Layout) -> str:
    images = layout.data / "glance"
    return f"""{_common(layout, "glance")}
enabled_backends = fs:file
worker_self_reference_url = {url("glance")}

[database]
connection = {database(layout, "glance")}

[paste_deploy]
flavor = keystone
config_file = {layout.etc / "glance" / "glance-api-paste.ini"}

[glance_store]
default_backend = fs

[fs]
filesystem_store_datadir = {images / "images"}

[os_glance_staging_store]
filesystem_store_datadir = {images / "staging"}

[os_glance_tasks_store]
filesystem_store_datadir = {images / "tasks"}

{_authtoken(layout, "glance", "image")}"""


def neutron(layout: Layout) -> str:
    return f"""{_common(layout, "neutron")}
core_plugin = ml2
# Routers, gateways and floating IPs live in the database: no L3 agent serves them here.
# Trunks too: the installer's MachineSets put machines on trunks wherever Neutron has them
# (their driver is the agent-less one's, harness/localcloud/drivers). Segments for its ip_allocation
# extension, as OVN clouds have it: Nova boots on a port without an address (a network without a
# subnet) only where Neutron shows the port's ip_allocation `none`.
service_plugins = router,trunk,segments
auth_strategy = keystone
api_paste_config = {layout.etc / "neutron" / "api-paste.ini"}
dhcp_agent_notification = false
notify_nova_on_port_status_changes = true
notify_nova_on_port_data_changes = true

[database]
connection = {database(layout, "neutron")}

{_authtoken(layout, "neutron", "network")}
[nova]
{_auth(layout, "nova")}
[ml2]
type_drivers = flat,vlan,vxlan
tenant_network_types = vxlan
# Binds ports with no agent (harness/localcloud/drivers).
mechanism_drivers = localcloud
extension_drivers = port_security

[ml2_type_flat]
flat_networks = *

[ml2_type_vxlan]
vni_ranges = 1:1000
"""


def nova(layout: Layout) -> str:
    return f"""{_common(layout, "nova")}
# Servers are rows in the database: nothing boots. This fake keeps its node's identity in
# state_path/compute_id as real drivers do (FakeDriver makes a new one per start: no restart).
compute_driver = fake.FakeDriverWithoutFakeNodes
host = {COMPUTE_HOSTS["nova"]}
my_ip = {HOST}
enabled_apis = osapi_compute
# One compute host per zone: a resize stays on its host.
allow_resize_to_same_host = true
# Nothing plugs VIFs.
vif_plugging_is_fatal = false
vif_plugging_timeout = 0

[api]
auth_strategy = keystone

[wsgi]
api_paste_config = {layout.etc / "nova" / "api-paste.ini"}

[api_database]
connection = {database(layout, "nova_api")}

[database]
connection = {database(layout, "nova")}

[conductor]
workers = 1

[scheduler]
workers = 1
discover_hosts_in_cells_interval = 10

{_authtoken(layout, "nova", "compute")}
[placement]
{_auth(layout, "placement")}
[neutron]
{_auth(layout, "neutron")}
[cinder]
os_region_name = {REGION}
{_auth(layout, "cinder")}
[glance]
region_name = {REGION}

# Nova's calls to Cinder's attachment API need the service token in current releases.
[service_user]
send_service_user_token = true
{_auth(layout, "nova")}"""


def nova_compute_host(layout: Layout, host: str) -> str:
    """The extra configuration of one compute process: its host name, and a state directory of its
    own (Nova keeps the compute node's identity there and refuses to start on another's)."""
    return f"[DEFAULT]\nhost = {host}\nstate_path = {layout.data / 'nova' / host}\n"


def cinder(layout: Layout) -> str:
    backends = "".join(
        f"""
[{backend}]
volume_backend_name = {backend}
volume_driver = localcloud_drivers.cinder.BookkeepingVolumeDriver
backend_availability_zone = {zone}
"""
        for zone, backend in VOLUME_BACKENDS.items()
    )
    return f"""{_common(layout, "cinder")}
auth_strategy = keystone
api_paste_config = {layout.etc / "cinder" / "api-paste.ini"}
my_ip = {HOST}
enabled_backends = {",".join(VOLUME_BACKENDS.values())}
storage_availability_zone = nova
# Not default_volume_type: a type that does not exist fails every create with a 500.
glance_api_servers = {url("glance")}
osapi_volume_workers = 1
# The filters the API accepts (volume list --property is `metadata`): without the file, none.
resource_query_filters_file = {layout.etc / 'cinder' / 'resource_filters.json'}

[database]
connection = {database(layout, "cinder")}

{_authtoken(layout, "cinder", "block-storage")}
[nova]
{_auth(layout, "nova")}
[service_user]
send_service_user_token = true
{_auth(layout, "cinder")}
# privsep would start `sudo privsep-helper`: there is no sudo, and we are root.
[cinder_sys_admin]
helper_command = {layout.bin("privsep-helper")} --config-file {layout.etc / "cinder" / "cinder.conf"}
{backends}"""


def octavia(layout: Layout) -> str:
    """The worker's configuration (the API adds octavia-api.conf): the `amphora` provider with
    no-op amphora and compute drivers and a network driver that releases the VIP ports the API
    made in Neutron (harness/localcloud/drivers); nothing boots."""
    certificates = layout.data / "octavia" / "ca"
    return f"""{_common(layout, "octavia")}

[api_settings]
bind_host = {HOST}
bind_port = {PORTS["octavia"]}
auth_strategy = keystone
default_provider_driver = amphora
enabled_provider_drivers = amphora:The amphora provider with no-op amphorae (nothing boots)

[database]
connection = {database(layout, "octavia")}

[controller_worker]
amphora_driver = amphora_noop_driver
compute_driver = compute_noop_driver
network_driver = localcloud_vip_ports
image_driver = image_noop_driver
loadbalancer_topology = SINGLE
# The no-op compute driver boots nothing on these: they only have to be set.
amp_boot_network_list = localcloud-no-network
amp_flavor_id = localcloud-no-flavor
amp_image_tag = localcloud-no-image
workers = 1
client_ca = {certificates / "ca.pem"}

[certificates]
# The amphorae's certificates are made (the flows do) and never used.
ca_certificate = {certificates / "ca.pem"}
ca_private_key = {certificates / "ca.key"}

[oslo_messaging]
topic = octavia_prov

{_authtoken(layout, "octavia", "load-balancer")}
[service_auth]
{_auth(layout, "octavia")}
[neutron]
region_name = {REGION}
valid_interfaces = public
"""


def octavia_api() -> str:
    """The API's own: Neutron's real driver, which makes each VIP port in Neutron."""
    return "[controller_worker]\nnetwork_driver = allowed_address_pairs_driver\n"


def manila(layout: Layout) -> str:
    """Shares with Manila's own test driver (DummyDriver: bookkeeping, no storage backend, no
    share servers), as Cinder's volumes are kept here; NFS, one backend."""
    return f"""{_common(layout, "manila")}
auth_strategy = keystone
api_paste_config = {layout.etc / "manila" / "api-paste.ini"}
my_ip = {HOST}
enabled_share_backends = dummy
enabled_share_protocols = NFS
default_share_type = default
osapi_share_workers = 1

[database]
connection = {database(layout, "manila")}

[dummy]
share_backend_name = dummy
share_driver = manila.tests.share.drivers.dummy.DummyDriver
driver_handles_share_servers = false
# Its methods sleep seconds each by default, to look like a backend: not here.
dummy_driver_default_driver_method_delay = 0
dummy_driver_driver_methods_delays = ensure_share:0

{_authtoken(layout, "manila", "shared-file-system")}"""


def swift_dir(layout: Layout) -> Path:
    """swift.conf and the rings: data, not configuration (the hash path suffix must stay with the objects)."""
    return layout.data / "swift"


def _swift_default(layout: Layout, port: int) -> str:
    return f"""[DEFAULT]
bind_ip = {HOST}
bind_port = {port}
# One process, no forked workers: `down` signals its session, and 2 cores do not need more.
workers = 0
swift_dir = {swift_dir(layout)}
devices = {swift_dir(layout) / "devices"}
# A plain directory, not a mounted disk.
mount_check = false
log_level = INFO
"""


def swift_server(layout: Layout, server: str) -> str:
    """An account, container or object server: its one app, no replicators (one replica)."""
    return f"""{_swift_default(layout, PORTS[f"swift-{server}"])}
[pipeline:main]
pipeline = {server}-server

[app:{server}-server]
use = egg:swift#{server}
"""


def swift_proxy(layout: Layout) -> str:
    """The proxy: Swift's API with Keystone tokens, and S3 (s3api) with EC2 credentials checked by Keystone (s3token)."""
    return f"""{_swift_default(layout, PORTS["swift"])}
[pipeline:main]
# No `cache`: there is no memcached here (the proxy keeps its infocache per request; s3token asks Keystone each time).
# authtoken before s3api, as s3api's docs say: after s3token, it marks the identity s3token confirmed Invalid
# (a request with no X-Auth-Token), and keystoneauth then refuses every S3 request (SignatureDoesNotMatch).
pipeline = catch_errors gatekeeper healthcheck proxy-logging listing_formats authtoken s3api s3token keystoneauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:copy]
use = egg:swift#copy

[filter:slo]
use = egg:swift#slo

[filter:dlo]
use = egg:swift#dlo

[filter:s3api]
use = egg:swift#s3api
# The region S3 clients sign for (Pulumi's `region=`): the cloud's.
location = {REGION}

[filter:s3token]
use = egg:swift#s3token
auth_uri = {url("keystone", "/v3")}
# Keystone lets only admin or service users validate EC2 signatures (/v3/s3tokens).
{_auth(layout, "swift")}secret_cache_duration = 0

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
delay_auth_decision = true
www_authenticate_uri = {url("keystone")}
service_token_roles_required = true
service_type = object-store
token_cache_time = {TOKEN_CACHE_TIME}
{_auth(layout, "swift")}
[filter:keystoneauth]
use = egg:swift#keystoneauth
# A project's members own its account, as on most clouds (swiftoperator is the tenant's too).
operator_roles = admin, member, swiftoperator
"""


def clouds_yaml(layout: Layout, project: str = TENANT_USER) -> str:
    """The tenant `openstack` in `project` (as its own user) and the operator; the main file names
    every other project's tenant too (`localcloud-<project>`), for the operator's steps."""

    def entry(name: str, user: str, project: str) -> str:
        return f"""  {name}:
    auth:
      auth_url: {url("keystone", "/v3")}
      username: {user}
      password: {layout.password()}
      project_name: {project}
      user_domain_name: Default
      project_domain_name: Default
    region_name: {REGION}
    interface: public
    identity_api_version: 3
"""

    return (
        "# Written by `python -m harness.localcloud up`: the local cloud on loopback.\nclouds:\n"
        + entry(CLOUD, project, project)
        + entry(ADMIN_CLOUD, "admin", "admin")
        + "".join(entry(f"localcloud-{other}", other, other) for other in PROJECTS if other != project and project == TENANT_USER)
    )


def render(layout: Layout) -> None:
    """Writes every service's configuration, with the paste pipelines the wheels ship beside it."""
    files: dict[Path, str] = {
        layout.etc / "keystone" / "keystone.conf": keystone(layout),
        layout.etc / "placement" / "placement.conf": placement(layout),
        layout.etc / "glance" / "glance-api.conf": glance(layout),
        layout.etc / "neutron" / "neutron.conf": neutron(layout),
        layout.etc / "nova" / "nova.conf": nova(layout),
        layout.etc / "cinder" / "cinder.conf": cinder(layout),
        layout.etc / "octavia" / "octavia.conf": octavia(layout),
        layout.etc / "octavia" / "octavia-api.conf": octavia_api(),
        layout.etc / "manila" / "manila.conf": manila(layout),
        layout.etc / "swift" / "proxy-server.conf": swift_proxy(layout),
        **{layout.etc / "swift" / f"{server}-server.conf": swift_server(layout, server) for server in SWIFT_SERVERS},
        **{layout.clouds_yaml_of(project): clouds_yaml(layout, project) for project in PROJECTS},
    }
    for host in COMPUTE_HOSTS.values():
        files[layout.etc / "nova" / f"{host}.conf"] = nova_compute_host(layout, host)
    for path, text in files.items():
        if path.is_file() and path.read_text() == text:
            continue  # an `up` of a running cloud: a stack may be reading clouds.yaml at this moment
        path.parent.mkdir(parents=True, exist_ok=True)
        written = path.with_name(f".{path.name}.new")
        written.write_text(text)
        written.chmod(0o600)
        written.replace(path)
    for service, name in (("glance", "glance-api-paste.ini"), ("neutron", "api-paste.ini"), ("nova", "api-paste.ini"), ("cinder", "api-paste.ini"), ("cinder", "resource_filters.json"), ("manila", "api-paste.ini")):
        shutil.copyfile(layout.venv / "etc" / service / name, layout.etc / service / name)
    for service in ("glance", "neutron", "nova", "cinder", "octavia", "manila"):
        (layout.data / service / "lock").mkdir(parents=True, exist_ok=True)
    for host in COMPUTE_HOSTS.values():
        (layout.data / "nova" / host).mkdir(parents=True, exist_ok=True)

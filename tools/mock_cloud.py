"""A described OpenStack cloud that answers the program's invokes under mocks.

The description (samples/cloud/dev.yaml by default; tests pass their own) says what the
project has: flavors, images, networks, floating IPs, compute and volume zones, volume types, Neutron's
extensions and quotas, and what comes with the provider's token: its region, the catalog's public
endpoints and the token itself. Optionally the networks and subnets in detail (`neutronNetworks`,
`subnets`: what ocp:openstack.existingNetwork and the extra networks are held against, with the
routers on each subnet; without them any network or subnet a stack names is there and fits) and
several images of one name (`images: {name: [{id, active, created, status, visibility, project},
...]}`: every one counts where a name is looked up as Glance lists it), and flavors' extra specs. What a deployed stack holds (the state a `--from` preview starts
from) is added: its servers, ports and server groups exist and count as in use. A lookup
that matches nothing fails as the provider's data sources do.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, StrictBool, StrictInt, StrictStr, ValidationError

from cluster import machine_yaml
from cluster.addresses import plan_addresses
from cluster.bootstrap_credential import ALLOW_HTTP, TOKEN_COMMAND
from cluster.cloud_facts import PROBE_NETWORKS, TAG_EXTENSIONS, UNLIMITED, wanted
from cluster.config import load_config
from cluster.cloud_probe import answer as probe_answer
from cluster.preflight import PROBE_COMMAND
from tools.mock_neutron import Answer, NeutronAnswers, fake_id, not_found

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "samples" / "cloud" / "dev.yaml"
# The stack files the default description describes the cloud of (the repository's lab): its own
# stacks and their committed states. Any other stack file is a user's, for a cloud it is not.
SAMPLE_STACKS = frozenset(ROOT / f"Pulumi.{name}.yaml" for name in ("dev", "standalone", "example", "kvm"))
SAMPLE_STATES = ROOT / "tests" / "states"
# What a flavor a user's stack names is taken to be where their cloud is not described: more than any role needs.
FITS_ANY_ROLE = [1024, 4 * 1024 * 1024, 100_000]

INSTANCE = "openstack:compute/instance:Instance"
PORT = "openstack:networking/port:Port"
SERVER_GROUP = "openstack:compute/serverGroup:ServerGroup"
FIP_ASSOCIATION = "openstack:networking/floatingIpAssociate:FloatingIpAssociate"



def load(path: Path | str = DEFAULT) -> dict[str, Any]:
    return machine_yaml.load(Path(path).read_text())


class DescriptionError(Exception):
    """A cloud description this module cannot answer from, in one message."""


def _quota(value: Any) -> Any:
    numbers = value if isinstance(value, list) and len(value) == 2 else [value]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise ValueError("write the limit, or [limit, what other things in the project use]")
    return value


Quotaed = Annotated[Any, PlainValidator(_quota)]


class _Quotas(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)
    instances: Quotaed
    cores: Quotaed
    ram: Quotaed
    serverGroups: Quotaed
    serverGroupMembers: Quotaed
    ports: Quotaed
    securityGroups: Quotaed
    securityGroupRules: Quotaed
    floatingIps: Quotaed
    volumes: Quotaed
    gigabytes: Quotaed
    # Neutron's, which the preflight holds as limits and the needs table reads: optional (unlimited).
    networks: Quotaed | None = None
    subnets: Quotaed | None = None
    routers: Quotaed | None = None


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)


class _ImageCopy(_Strict):
    """One of several images of one name."""

    id: StrictStr
    active: StrictBool = True
    created: StrictStr  # ISO 8601, as Glance gives created_at
    # Glance's status where not active (queued, saving, deactivated...), its visibility where not private, and its
    # owner where another project: what the listing by name the installer and the Machine API make shows too.
    status: StrictStr | None = None
    visibility: StrictStr = "private"
    project: StrictStr | None = None


class _Network(_Strict):
    id: StrictStr
    name: StrictStr
    portSecurity: StrictBool = True
    mtu: StrictInt | None = None
    # Its owner's project ID; unset: the description's project.
    project: StrictStr | None = None
    subnets: list[StrictStr] = []  # their IDs


class _Subnet(_Strict):
    id: StrictStr
    name: StrictStr
    network: StrictStr  # its network's ID
    cidr: StrictStr
    pools: list[list[StrictStr]] = []  # DHCP allocation pools: [first, last] each
    # IPv6: slaac, dhcpv6-stateless, dhcpv6-stateful, or null (none), as tools.describe_cloud writes it.
    ipv6AddressMode: StrictStr | None = None
    # The routers with an interface on it: router ID -> its gateway's network ID ("": none; null: another
    # project's router, not shown). Unset: not described (any floating IP a stack plans there is taken to work).
    routers: dict[StrictStr, StrictStr | None] | None = None


class _Description(BaseModel):
    """What samples/cloud/dev.yaml holds; a user's own description must say the same things."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)
    project: StrictStr
    region: StrictStr = ""
    catalog: dict[StrictStr, StrictStr | dict[StrictStr, StrictStr] | None] | None = None
    token: StrictStr
    # [vCPUs, RAM MiB, disk GB], and the ephemeral disk's GiB where the flavor has one (tools.describe_cloud writes it).
    flavors: dict[StrictStr, Annotated[tuple[StrictInt, ...], Field(min_length=3, max_length=4)]]
    # The extra specs of the flavors that have any (an Ironic flavor's baremetal: "true" lifts the minimums).
    flavorExtraSpecs: dict[StrictStr, dict[StrictStr, StrictStr]] = {}
    images: dict[StrictStr, StrictBool | list[_ImageCopy]]
    networks: dict[StrictStr, StrictBool]
    # Networks and subnets in detail (tools.describe_cloud writes them); unset: whatever a stack names fits.
    neutronNetworks: list[_Network] | None = None
    subnets: list[_Subnet] | None = None
    floatingIps: dict[StrictStr, StrictStr]
    computeZones: list[StrictStr]
    volumeZones: list[StrictStr]
    volumeTypes: list[StrictStr]
    networkExtensions: list[StrictStr]
    quotas: _Quotas
    computeLimitsForbidden: StrictBool = False
    computeHosts: StrictInt | None = None
    # The token's Keystone roles (tools.describe_cloud writes them; the needs table checks them).
    roles: list[StrictStr] | None = None
    # How the cloud takes the bootstrap's application credential: honoured (Glance reads the
    # access rule), refused (Glance answers 401), ignored (the token may list images too),
    # unsupported (Keystone before Train).
    bootstrapCredential: Literal["honoured", "refused", "ignored", "unsupported"] = "honoured"


def read(path: Path | str) -> dict[str, Any]:
    """A cloud description from a file, checked: DescriptionError names the file and every wrong key."""
    try:
        description = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise DescriptionError(f"cloud description {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise DescriptionError(f"cloud description {path}: not YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(description, dict):
        raise DescriptionError(f"cloud description {path}: a mapping of project, flavors, images, ... (as in samples/cloud/{DEFAULT.name}), not {type(description).__name__}")
    try:
        _Description.model_validate(description)
    except ValidationError as error:
        wrong = "; ".join(f"{'.'.join(str(part) for part in item['loc'])}: {item['msg'].removeprefix('Value error, ')}" for item in error.errors()[:6])
        raise DescriptionError(f"cloud description {path}: {wrong} (samples/cloud/{DEFAULT.name} shows every key)") from None
    return description


def describes(stack_file: Path) -> bool:
    """Whether the default description is the cloud of this stack file."""
    path = stack_file.resolve()
    return path in SAMPLE_STACKS or path.is_relative_to(SAMPLE_STATES)


def stand_in(config: Mapping[str, str], description: Mapping[str, Any]) -> dict[str, Any] | None:
    """For a user's own OpenStack stack with no description of their cloud: `description` with every
    name the stack uses there and fit, and no quota, so that the preflight's checks of the cloud pass
    and its checks of what the stack runs (a running worker's server group) still hold. None: not
    OpenStack (or a refused config, which the program's run reports)."""
    try:
        settings = load_config(dict(config))
    except Exception:  # noqa: BLE001 - a refused config: the program's run says why
        return None
    if settings.openstack is None:
        return None
    want = wanted(settings, plan_addresses(settings))
    roles = (settings.masters, settings.workers)
    volumes = [role.root_volume for role in roles if role.root_volume]
    return {
        **{key: value for key, value in description.items() if key != "computeHosts"},
        "flavors": {**description["flavors"], **dict.fromkeys(want.flavors, FITS_ANY_ROLE)},
        "images": {**description["images"], **dict.fromkeys(want.images, True)},
        "networks": {**description["networks"], **dict.fromkeys(want.external_networks, True)},
        "floatingIps": {**description["floatingIps"], **dict.fromkeys(want.floating_ips, "")},
        "computeZones": sorted({*description["computeZones"], *(zone for role in roles for zone in role.availability_zones)}),
        "volumeZones": sorted({*description["volumeZones"], *(zone for volume in volumes for zone in volume.availability_zones)}),
        "volumeTypes": sorted({*description["volumeTypes"], *(volume.type for volume in volumes if volume.type)}),
        "networkExtensions": sorted({*description["networkExtensions"], *TAG_EXTENSIONS}),
        "quotas": dict.fromkeys(description["quotas"], UNLIMITED),
    }


def described(**changes: Any) -> dict[str, Any]:
    """The default description with top-level entries replaced, or merged one level down when
    the change is a mapping (`flavors={"master": [4, 8192, 40]}` changes one flavor)."""
    description = copy.deepcopy(load())
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(description.get(key), dict):
            description[key] = {**description[key], **value}
        else:
            description[key] = value
    return description


class MockCloud(NeutronAnswers):
    def __init__(self, description: Mapping[str, Any] | None = None, deployed: Iterable[Any] = ()):
        super().__init__()
        self.d = dict(description if description is not None else load())
        # (type, id, inputs) of each resource a deployed stack holds
        self.deployed = [(item.type, item.id, item.inputs) for item in deployed]

    def _of(self, type_: str) -> list[tuple[str, dict[str, Any]]]:
        return [(id_, inputs) for t, id_, inputs in self.deployed if t == type_]

    def call(self, token: str, args: Mapping[str, Any]) -> Answer | None:
        """The invoke's answer, or None for tokens this cloud does not know."""
        handler = self._HANDLERS.get(token)
        return handler(self, args) if handler else None

    def _flavor(self, args: Mapping[str, Any]) -> Answer:
        name = args.get("name")
        if name not in self.d["flavors"]:
            return not_found(f"flavor {name}")
        vcpus, ram, disk = self.d["flavors"][name][:3]  # a fourth number is the ephemeral disk: the probe's to read
        # The provider's flavor data source reads the extra specs too (flavors.ListExtraSpecs).
        extra_specs = dict((self.d.get("flavorExtraSpecs") or {}).get(name) or {})
        return {"id": fake_id("flavor", name), "name": name, "vcpus": vcpus, "ram": ram, "disk": disk, "extraSpecs": extra_specs}

    def _copies(self, name: str) -> list[dict[str, Any]]:
        """The images of this name, newest first (Glance's created_at:desc, then ID)."""
        described = self.d["images"][name]
        if not isinstance(described, list):
            return [{"id": f"image-{name}", "active": described, "created": "2026-01-01T00:00:00Z"}]
        return sorted(described, key=lambda copy: (copy["created"], copy["id"]), reverse=True)

    def _image(self, args: Mapping[str, Any]) -> Answer:
        name = args.get("name")
        if name not in self.d["images"]:
            return not_found(f"image {name}")
        copies = self._copies(name)
        # most_recent: the newest active one, else (as the description has it) the newest
        newest = next((copy for copy in copies if copy.get("active", True)), copies[0])
        active = newest.get("active", True)
        return {
            "id": newest["id"],
            "name": name,
            "createdAt": newest["created"],
            "checksum": hashlib.md5(name.encode()).hexdigest() if active else "",
            "sizeBytes": 2_000_000_000 if active else 0,
        }

    def _listed(self, name: str) -> list[dict[str, Any]]:
        """Every image of this name as Glance lists it by name (cluster/cloud_probe.py images_of), newest first."""
        if name not in self.d["images"]:
            return []
        listed = []
        for each in self._copies(name):
            status = each.get("status") or ("active" if each.get("active", True) else "queued")
            project = each.get("project") or f"project-{self.d['project']}"
            listed.append({"id": each["id"], "status": status, "visibility": each.get("visibility", "private"), "project": project, "created": each["created"]})
        return listed

    def _image_ids(self, args: Mapping[str, Any]) -> Answer:
        """The provider lists active images only; sorted as asked (the preflight asks newest first)."""
        name = args.get("name")
        if args.get("sort") != "created_at:desc":
            return {}, [("sort", f"the mock cloud sorts images by created_at:desc only, not {args.get('sort')!r}")]
        copies = self._copies(name) if name in self.d["images"] else []
        return {"id": f"images-{name}", "ids": [copy["id"] for copy in copies if copy.get("active", True)]}

    def _floating_ip(self, args: Mapping[str, Any]) -> Answer:
        address = str(args.get("address"))
        if address not in self.d["floatingIps"]:
            return not_found(f"floating IP {address}")
        port = self.d["floatingIps"][address]
        for _, inputs in self._of(FIP_ASSOCIATION):
            if inputs.get("floatingIp") == address:
                port = inputs.get("portId", "")
        return {"id": fake_id("fip", address), "address": address, "portId": port}

    def _scope(self, args: Mapping[str, Any]) -> Answer:
        region = self.d.get("region", "")
        answer: dict[str, Any] = {
            "id": args.get("name", "scope"),
            "projectId": f"project-{self.d['project']}",
            "projectName": self.d["project"],
            "region": region,
            "serviceCatalogs": [
                {
                    "type": kind,
                    "name": kind,
                    "id": f"service-{kind}",
                    "endpoints": [
                        {"id": f"endpoint-{kind}-{where}", "interface": "public", "region": where, "regionId": where, "url": url}
                        for where, url in (urls.items() if isinstance(urls, Mapping) else [(region, urls)])
                    ],
                }
                for kind, urls in (self.d.get("catalog") or {}).items()
                if urls
            ],
        }
        # The token's roles as Keystone lists them (implied ones too); not described: a member's.
        roles = self.d["roles"] if self.d.get("roles") is not None else ["member", "reader"]
        answer["roles"] = [{"roleId": f"role-{role}", "roleName": role} for role in roles]
        if args.get("setTokenId"):
            answer["tokenId"] = self.d["token"]
        return answer

    def _quota(self, name: str) -> tuple[int, int]:
        value = self.d["quotas"][name]
        return (value[0], value[1]) if isinstance(value, list) else (value, 0)

    def _compute_quota(self, args: Mapping[str, Any]) -> Answer:
        names = ("instances", "cores", "ram", "serverGroups", "serverGroupMembers")
        return {"id": "quota-set", **{name: self._quota(name)[0] for name in names}}

    def _limits(self, args: Mapping[str, Any]) -> Answer:
        if self.d.get("computeLimitsForbidden"):  # Nova's default policy, for a member naming its own project
            return {}, [("projectId", "Policy doesn't allow os_compute_api:limits:other_project to be performed.")]
        instances = [inputs for _, inputs in self._of(INSTANCE)]
        sizes = [self.d["flavors"].get(inputs.get("flavorName"), (0, 0, 0)) for inputs in instances]
        answer: dict[str, Any] = {"id": "limits"}
        for quota, limit_key, used_key, own in (
            ("instances", "maxTotalInstances", "totalInstancesUsed", len(instances)),
            ("cores", "maxTotalCores", "totalCoresUsed", sum(size[0] for size in sizes)),
            ("ram", "maxTotalRamSize", "totalRamUsed", sum(size[1] for size in sizes)),
            ("serverGroups", "maxServerGroups", "totalServerGroupsUsed", len(self._of(SERVER_GROUP))),
        ):
            limit, used = self._quota(quota)
            answer[limit_key], answer[used_key] = limit, used + own
        answer["maxServerGroupMembers"] = self._quota("serverGroupMembers")[0]  # per group: no usage
        return answer

    def _network_quota(self, args: Mapping[str, Any]) -> Answer:
        return {
            "id": "network-quota",
            "port": self._quota("ports")[0],
            "securityGroup": self._quota("securityGroups")[0],
            "securityGroupRule": self._quota("securityGroupRules")[0],
            "floatingip": self._quota("floatingIps")[0],
            **{
                field: self._quota(key)[0] if self.d["quotas"].get(key) is not None else UNLIMITED
                for field, key in (("network", "networks"), ("subnet", "subnets"), ("router", "routers"))
            },
        }

    def _volume_quota(self, args: Mapping[str, Any]) -> Answer:
        per_type = {f"{kind}_{name}": "-1" for name in self.d["volumeTypes"] for kind in ("volumes", "gigabytes", "snapshots")}
        return {
            "id": "volume-quota",
            "volumes": self._quota("volumes")[0],
            "gigabytes": self._quota("gigabytes")[0],
            "volumeTypeQuota": per_type,
        }

    def _port_ids(self, args: Mapping[str, Any]) -> Answer:
        ours = self._of(PORT)
        if "projectId" in args:
            others = [f"port-other-{index}" for index in range(self._quota("ports")[1])]
            return {"id": "ports", "ids": others + [id_ for id_, _ in ours]}
        tags = set(args.get("tags") or ())
        ids = [
            id_
            for id_, inputs in ours
            if tags <= set(inputs.get("tags") or ()) and args.get("name") in (None, inputs.get("name"))
        ]
        return {"id": "ports", "ids": ids}

    def _zones(self, args: Mapping[str, Any]) -> Answer:
        return {"id": "zones", "names": list(self.d["computeZones"])}

    def _volume_zones(self, args: Mapping[str, Any]) -> Answer:
        return {"id": "volume-zones", "names": list(self.d["volumeZones"])}

    def _server_group(self, args: Mapping[str, Any]) -> Answer:
        name = args.get("name")
        groups = [id_ for id_, inputs in self._of(SERVER_GROUP) if inputs.get("name") == name]
        if not groups:
            return not_found(f"server group {name}")
        members = [
            id_
            for id_, inputs in self._of(INSTANCE)
            if any(hint.get("group") == groups[0] for hint in inputs.get("schedulerHints") or ())
        ]
        return {"id": groups[0], "name": name, "members": members}

    def _run(self, args: Mapping[str, Any]) -> Answer:
        if args.get("command") == PROBE_COMMAND:  # cluster/cloud_probe.py's line; hosts in an admin's view only
            hosts = ["up"] * self.d["computeHosts"] if self.d.get("computeHosts") is not None else None
            asked = (args.get("environment") or {}).get(PROBE_NETWORKS)
            if not asked:
                return {"stdout": probe_answer(self.d["networkExtensions"], hosts), "stderr": ""}
            wants = json.loads(asked)
            networks = {ref: self._networks_named(ref) for ref in wants.get("networks") or ()}
            subnets = {ref: self._subnets_named(ref) for ref in wants.get("subnets") or ()}
            images = {name: self._listed(name) for name in wants["images"]} if wants.get("images") else None
            # The flavors' ephemeral disks: a flavor's fourth number (none: 0), as Nova lists them.
            ephemeral = {name: sum(self.d["flavors"][name][3:]) for name in wants.get("flavors") or () if name in self.d["flavors"]}
            return {
                "stdout": probe_answer(self.d["networkExtensions"], hosts, networks, subnets, images=images, ephemeral=ephemeral if wants.get("flavors") else None),
                "stderr": "",
            }
        if args.get("command") == TOKEN_COMMAND:  # components/openstack/bootstrap_token.py's answers
            kind = self.d.get("bootstrapCredential", "honoured")
            environment = args.get("environment") or {}
            keystone = str(environment.get("OCP_KEYSTONE_URL") or "")
            if keystone.lower().startswith("http://") and environment.get(ALLOW_HTTP) != "true":  # as the script refuses
                return {"stdout": json.dumps({"plainHttp": keystone}), "stderr": ""}
            token = {"token": f"{self.d['token']}-bootstrap", "read": 200, "listed": 401}
            answer = {
                "honoured": token,
                "refused": {**token, "read": 401},
                "ignored": {**token, "listed": 200},
                "unsupported": {"keystone": 401},
            }[kind]
            return {"stdout": json.dumps(answer), "stderr": ""}
        return {}, [("command", f"the mock cloud does not run {args.get('command')!r}")]

    _HANDLERS = {
        "openstack:compute/getFlavor:getFlavor": _flavor,
        "openstack:images/getImage:getImage": _image,
        "openstack:images/getImageIds:getImageIds": _image_ids,
        "openstack:networking/getNetwork:getNetwork": NeutronAnswers._network,
        "openstack:networking/getSubnet:getSubnet": NeutronAnswers._subnet,
        "openstack:networking/getFloatingIp:getFloatingIp": _floating_ip,
        "openstack:identity/getAuthScope:getAuthScope": _scope,
        "openstack:compute/getLimitsV2:getLimitsV2": _limits,
        "openstack:compute/getQuotaSetV2:getQuotaSetV2": _compute_quota,
        "openstack:networking/getQuotaV2:getQuotaV2": _network_quota,
        "openstack:blockstorage/getQuotasetV3:getQuotasetV3": _volume_quota,
        "openstack:networking/getPortIds:getPortIds": _port_ids,
        "openstack:compute/getAvailabilityZones:getAvailabilityZones": _zones,
        "openstack:blockstorage/getAvailabilityZonesV3:getAvailabilityZonesV3": _volume_zones,
        "openstack:compute/getServergroupV2:getServergroupV2": _server_group,
        "command:local:run": _run,
    }

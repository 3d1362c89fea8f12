"""The OpenStack plugin built here (toolchain/modules/pulumi-resource-openstack) against the
pulumi_openstack 5.5.3 SDK the program runs with: every token the SDK registers is served (but
the named gaps), and for what the program uses, the plugin takes exactly the inputs the SDK
sends, required where the SDK requires them, secret where the SDK keeps them secret."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
from functools import cache
from pathlib import Path

import pulumi_openstack
import pytest

PLUGIN = Path(__file__).resolve().parents[2] / ".toolchain" / "pulumi-home" / "plugins" / "resource-openstack-v5.5.3" / "pulumi-resource-openstack"
SDK = Path(pulumi_openstack.__file__).parent
# The SDK's legacy `index` aliases of resources the plugin serves under their module tokens
# (pulumi-openstack keeps them from its bridge metadata's history); the program uses none.
NOT_SERVED = {
    "openstack:index/bgpvpnNetworkAssociateV2:BgpvpnNetworkAssociateV2",
    "openstack:index/bgpvpnPortAssociateV2:BgpvpnPortAssociateV2",
    "openstack:index/bgpvpnRouterAssociateV2:BgpvpnRouterAssociateV2",
    "openstack:index/bgpvpnV2:BgpvpnV2",
    "openstack:index/getFwGroupV2:getFwGroupV2",
    "openstack:index/getFwPolicyV2:getFwPolicyV2",
    "openstack:index/getFwRuleV2:getFwRuleV2",
    "openstack:index/lbFlavorprofileV2:LbFlavorprofileV2",
    "openstack:index/lbLoadbalancerV2:LbLoadbalancerV2",
    "openstack:index/workflowWorkflowV2:WorkflowWorkflowV2",
}
# What the program registers and invokes (components/, cluster/), by SDK class and function.
USED_RESOURCES = {
    "openstack:compute/instance:Instance": "compute.InstanceArgs",
    "openstack:compute/serverGroup:ServerGroup": "compute.ServerGroupArgs",
    "openstack:networking/network:Network": "networking.NetworkArgs",
    "openstack:networking/subnet:Subnet": "networking.SubnetArgs",
    "openstack:networking/router:Router": "networking.RouterArgs",
    "openstack:networking/routerInterface:RouterInterface": "networking.RouterInterfaceArgs",
    "openstack:networking/port:Port": "networking.PortArgs",
    "openstack:networking/floatingIp:FloatingIp": "networking.FloatingIpArgs",
    "openstack:networking/floatingIpAssociate:FloatingIpAssociate": "networking.FloatingIpAssociateArgs",
    "openstack:networking/secGroup:SecGroup": "networking.SecGroupArgs",
    "openstack:networking/secGroupRule:SecGroupRule": "networking.SecGroupRuleArgs",
    "openstack:images/image:Image": "images.ImageArgs",
    "openstack:blockstorage/volume:Volume": "blockstorage.VolumeArgs",
    "openstack:identity/applicationCredential:ApplicationCredential": "identity.ApplicationCredentialArgs",
}
USED_FUNCTIONS = {
    "openstack:compute/getFlavor:getFlavor", "openstack:images/getImage:getImage", "openstack:networking/getNetwork:getNetwork",
    "openstack:networking/getFloatingIp:getFloatingIp", "openstack:identity/getAuthScope:getAuthScope",
    "openstack:compute/getLimitsV2:getLimitsV2", "openstack:compute/getQuotaSetV2:getQuotaSetV2",
    "openstack:networking/getQuotaV2:getQuotaV2", "openstack:blockstorage/getQuotasetV3:getQuotasetV3",
    "openstack:networking/getPortIds:getPortIds", "openstack:compute/getAvailabilityZones:getAvailabilityZones",
    "openstack:blockstorage/getAvailabilityZonesV3:getAvailabilityZonesV3", "openstack:compute/getServergroupV2:getServergroupV2",
}

pytestmark = pytest.mark.skipif(not PLUGIN.is_file(), reason="the OpenStack plugin is not built: run `bash .ci/toolchain`")


@cache
def served() -> dict:
    """What the plugin serves (its --ocp-mapping: tokens, Terraform names, properties)."""
    return json.loads(subprocess.run([str(PLUGIN), "--ocp-mapping"], capture_output=True, text=True, check=True).stdout)


@cache
def sdk_tokens() -> tuple[set[str], set[str]]:
    resources, functions = set(), set()
    for path in SDK.rglob("*.py"):
        text = path.read_text()
        resources |= set(re.findall(r"super\(\w+, __self__\)\.__init__\(\s*'(openstack:[^']+)'", text))
        functions |= set(re.findall(r"invoke\('(openstack:[^']+)'", text))
    return resources, functions


def snake(name: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", name).lower()


def inputs(properties: dict) -> dict[str, dict]:
    """The plugin's inputs (what a program may send), by the SDK's Python name."""
    return {snake(p["name"]): p for p in properties.values() if p["required"] or p["optional"]}


def test_every_token_the_sdk_registers_is_served_but_the_named_gaps():
    resources, functions = sdk_tokens()
    assert len(resources) > 100 and len(functions) > 60
    served_tokens = set(served()["resources"]) | set(served()["functions"])
    assert (resources | functions) - served_tokens == NOT_SERVED
    assert served_tokens <= resources | functions  # nothing the SDK would not know
    assert served()["unmapped"] == {}  # every Terraform resource and data source has its token


@pytest.mark.parametrize("token", sorted(USED_RESOURCES))
def test_the_plugin_takes_the_inputs_the_sdk_sends(token):
    module, _, name = USED_RESOURCES[token].partition(".")
    args = getattr(importlib.import_module(f"pulumi_openstack.{module}"), name)
    parameters = {n: p for n, p in inspect.signature(args.__init__).parameters.items() if n not in ("self", "__self__")}
    plugin = inputs(served()["resources"][token]["properties"])
    assert set(plugin) == set(parameters)
    required = {n for n, p in parameters.items() if p.default is inspect.Parameter.empty}
    assert {n for n, p in plugin.items() if p["required"]} == required
    # What the SDK keeps secret in the state, the plugin marks sensitive.
    source = (SDK / module / f"{snake(token.rsplit(':', 1)[1]).lstrip('_')}.py").read_text()
    secret = set(re.findall(r'additional_secret_outputs=\[([^\]]*)\]', source)[0].replace('"', "").split(", ")) if "additional_secret_outputs" in source else set()
    marked = {p["name"] for p in served()["resources"][token]["properties"].values() if p["secret"]}
    assert marked == {name.strip() for name in secret if name.strip()}


@pytest.mark.parametrize("token", sorted(USED_FUNCTIONS))
def test_the_plugin_takes_the_arguments_the_sdk_invokes_with(token):
    member = token.rsplit(":", 1)[1]
    module = token.split(":")[1].split("/")[0]
    source = (SDK / module / f"{snake(member)}.py").read_text()
    sent = set(re.findall(r"__args__\['(\w+)'\]", source))
    plugin = {p["name"]: p for p in served()["functions"][token]["properties"].values() if p["required"] or p["optional"]}
    assert sent == set(plugin)
    required = {name for name, p in plugin.items() if p["required"]}
    signature = inspect.signature(getattr(importlib.import_module(f"pulumi_openstack.{module}"), snake(member)))
    assert {snake(name) for name in required} <= {n for n, p in signature.parameters.items()}


def _port_check_failures(inputs: list[dict]) -> list[list[str]]:
    """The plugin's own Check of a Port with each of these inputs (no cloud: validation only), as the engine asks it
    in every preview: the failures' reasons."""
    import grpc
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

    if not PLUGIN.is_file():
        pytest.skip("the OpenStack plugin is not built: run `bash .ci/toolchain`")
    process = subprocess.Popen([str(PLUGIN), "127.0.0.1:1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = process.stdout.readline().strip()
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            answers = []
            for each in inputs:
                news = struct_pb2.Struct()
                news.update({"networkId": "n", **each})
                checked = stub.Check(provider_pb2.CheckRequest(urn="urn:pulumi:s::p::openstack:networking/port:Port::p", olds=struct_pb2.Struct(), news=news), timeout=60)
                answers.append([failure.reason for failure in checked.failures])
            return answers
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_plugin_takes_the_sr_iov_ports_as_the_program_sends_them():
    """Issue 50, finding 10 (terraform-provider-openstack v3.4.0 resource_openstack_networking_port_v2.go): binding.vnic_type
    is checked against a list without vdpa, which the program therefore sends as valueSpecs' binding:vnic_type;
    binding.profile is a string that must hold a JSON object."""
    profile = '{"capabilities":["switchdev"],"trusted":true}'
    vdpa, physical, offload, listed, specs = _port_check_failures([
        {"binding": {"vnicType": "vdpa"}},
        {"binding": {"vnicType": "direct-physical"}},
        {"binding": {"vnicType": "direct", "profile": profile}},
        {"binding": {"vnicType": "direct", "profile": '["switchdev"]'}},
        {"valueSpecs": {"binding:vnic_type": "vdpa"}},
    ])
    assert len(vdpa) == 1 and "expected binding.0.vnic_type to be one of" in vdpa[0] and "got vdpa" in vdpa[0]
    assert physical == offload == specs == []
    assert len(listed) == 1 and '"binding.0.profile" must be a JSON object' in listed[0]

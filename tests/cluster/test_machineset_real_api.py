"""The example MachineSets (cluster/machineset.py) read by what reads them: a real Kubernetes API server with the
MachineSet CRD of the openshift/api module the installer is built with (machine/v1beta1, from the Go module cache,
as tests/ocp/played.py loads its CRDs), and the Machine API's OpenStack provider spec type from the same module,
decoded strictly in a small Go reader built here offline.

The CRD keeps providerSpec.value whole (x-kubernetes-preserve-unknown-fields), so the API server checks the
MachineSet around it; machine-api-provider-openstack reads the value with sigs.k8s.io/yaml's Unmarshal into
openshift/api machine/v1alpha1 OpenstackProviderSpec (pkg/clients/utils.go MachineSpecFromProviderSpec, release-4.19),
which drops an unknown field without a word: UnmarshalStrict refuses it, and a value of the wrong type either way.
machine/v1alpha1/types_openstack.go is the same code in the module here (v0.0.0-20250313134101-8a7efbfb5316) as in
MAPO's release-4.19 vendor directory (only comments differ) and byte for byte in release-4.22's and main's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cluster.config import load_config
from cluster.machineset import worker_machinesets
from harness import kubeapi
from tests.cluster.test_families import V4, V6, families
from tests.conftest import ROOT, stack_config, with_section
from tests.ocp.played import openshift_api_module

CRD = "machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml"
NAMESPACE = "openshift-machine-api"
GROUP = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
READER = """package main

import (
	"fmt"
	"io"
	"os"

	machinev1alpha1 "github.com/openshift/api/machine/v1alpha1"
	"sigs.k8s.io/yaml"
)

func main() {
	data, _ := io.ReadAll(os.Stdin)
	var spec machinev1alpha1.OpenstackProviderSpec
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("ok")
}
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    reason = kubeapi.missing()
    if reason:
        pytest.skip(reason)
    with kubeapi.running(tmp_path_factory.mktemp("kubeapi")) as running:
        running.kubectl("create", "-f", str(openshift_api_module() / CRD))
        running.kubectl("wait", "--for=condition=Established", "crd/machinesets.machine.openshift.io", "--timeout=60s")
        running.kubectl("create", "namespace", NAMESPACE)
        yield running


@pytest.fixture(scope="module")
def provider_spec_reader(tmp_path_factory) -> Path:
    """The reader, built offline from the module cache with the installer's own module graph (its go.mod and go.sum
    in toolchain/modules, whose build filled the cache), so every module it needs is there."""
    if shutil.which("go") is None:
        pytest.skip("go is missing (bash .ci/toolchain)")
    work = tmp_path_factory.mktemp("providerspec")
    modules = ROOT / "toolchain" / "modules" / "openshift-install"
    go_mod = (modules / "go.mod").read_text()
    (work / "go.mod").write_text("module providerspec\n" + go_mod.split("\n", 1)[1])
    shutil.copy(modules / "go.sum", work / "go.sum")
    (work / "main.go").write_text(READER)
    environment = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local"}
    built = subprocess.run(["go", "build", "-o", "reader", "."], cwd=work, env=environment, capture_output=True, text=True, timeout=900)
    if built.returncode != 0 and "module lookup disabled" in built.stderr:
        pytest.skip(f"the installer's modules are not in the module cache (bash .ci/toolchain): {built.stderr.strip()[-300:]}")
    assert built.returncode == 0, built.stderr
    return work / "reader"


def read(reader: Path, value: dict) -> str:
    """What the reader says of a provider spec, as the API server stores it (JSON)."""
    done = subprocess.run([str(reader)], input=json.dumps(value), capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


STACKS = {
    "dev": stack_config("dev"),
    "dual-stack with zones and root volumes": with_section(
        families(V4, V6), "workers", availabilityZones=["az1", "az2"], rootVolume={"size": 120, "types": ["ssd-az1", "ssd-az2"], "availabilityZones": ["storage-1", "storage-2"]}
    ),
    "ipv6-only": families(V6),
    "sr-iov and listed groups": with_section(
        with_section(stack_config("dev"), "openstack", existingNetwork={"networkId": "ocp-vlan-210", "subnetId": "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"},
                     additionalNetworkIds=["5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"], additionalSecurityGroupIds=[GROUP]),
        "openstack",
        additionalNetworks=[
            {"network": "offload", "pools": ["workers"], "portSecurity": False, "vnicType": "direct", "profile": {"capabilities": ["switchdev"], "trusted": True}},
            {"network": "7d0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b", "pools": ["workers"], "securityGroups": [GROUP], "vnicType": "vdpa"},
            {"network": "passthrough", "pools": ["workers"], "portSecurity": False, "vnicType": "direct-physical"},
        ],
    ),
}


@pytest.mark.parametrize("name", list(STACKS))
def test_the_api_server_and_the_machine_apis_type_take_the_example_as_written(name, api, provider_spec_reader):
    for machineset in worker_machinesets(load_config(STACKS[name]), "ocp4-x7k2p", {"passthrough": "8e1d7f3a-9b54-4e2f-8a7b-3d8e9f0a1b2c"}):
        # Strict field validation: a field the CRD's schema lacks outside providerSpec is an error, not pruned.
        stored = json.loads(api.kubectl("create", "--validate=strict", "-o", "json", "-f", "-", input=json.dumps(machineset)).stdout)
        api.kubectl("delete", "machineset", machineset["metadata"]["name"], "-n", NAMESPACE)
        assert stored["spec"] == machineset["spec"]  # nothing pruned, nothing defaulted
        value = stored["spec"]["template"]["spec"]["providerSpec"]["value"]
        assert read(provider_spec_reader, value) == "ok", value


def test_the_checks_can_fail(api, provider_spec_reader):
    """A misspelt field of the MachineSet is refused by the API server; an unknown provider spec field (MAPO's
    non-strict read would drop it without a word) and a profile in Neutron's own form, whose list MAPO's map of
    strings cannot hold (the whole spec would fail to decode), by the reader."""
    machineset = worker_machinesets(load_config(stack_config("dev")), "ocp4-x7k2p")[0]
    misspelt = {**machineset, "spec": {**machineset["spec"], "replica": 1}}
    refused = api.kubectl("create", "--validate=strict", "-f", "-", input=json.dumps(misspelt), check=False)
    assert refused.returncode != 0 and 'strict decoding error: unknown field "spec.replica"' in refused.stderr
    assert "unknown field \"subnet\"" in read(provider_spec_reader, {"flavor": "m1", "networks": [{"uuid": "n", "subnet": "s"}]})
    refused = read(provider_spec_reader, {"flavor": "m1", "networks": [{"uuid": "n", "profile": {"capabilities": ["switchdev"]}}]})
    assert "cannot unmarshal array" in refused and "NetworkParam.networks.profile of type string" in refused

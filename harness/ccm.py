"""The real OpenStack cloud controller manager (cloud-provider-openstack's
openstack-cloud-controller-manager, the `openstack-cloud-controller-manager` component of
toolchain/pins.toml) run as an OpenShift cluster runs it, against a harness.kubeapi API server
and the local cloud. Test harness, not product.

    files = InstallerFiles.from_bootstrap(json.loads(bootstrap_ign.read_text()))
    with kubeapi.running(tmp_path / "api") as api, ccm.running(api.kubeconfig, files, infra_id, tmp_path / "ccm") as controller:
        ccm.register_node(api, f"{infra_id}-master-0", role="master", node_ips=("10.0.0.10",))

What it is given is what a deployed stack put in the cluster: the installer's ConfigMap
openshift-config/cloud-provider-config (`manifests/cloud-provider-config.yaml`, the user's
ocp:installer.cloudProviderConfig lines merged in) and its credentials secret
kube-system/openstack-credentials (`openshift/99_cloud-creds-secret.yaml`: the clouds.yaml the
installer wrote, its one cloud named `openstack`), both read from the bootstrap's Ignition config,
which carries them into the cluster.

What OpenShift does between those and the controller is done here as it does it (read in
openshift/cluster-cloud-controller-manager-operator, release-4.20): the operator's
CloudConfigTransformer (pkg/cloud/openstack/openstack.go) rewrites the config, and the cloud
credential operator copies the clouds.yaml into the secret the controller mounts
(cloud-credential-operator pkg/openstack/actuator.go, syncCredentialSecret). The flags are its
Deployment's (pkg/cloud/openstack/assets/deployment.yaml), but for three, each said where it is
set. The controller serves nothing (--secure-port=0, as OpenShift runs it) and talks only to
the API server and the cloud, both on loopback; stopping it stops exactly its PID.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cluster.dataurl import file_contents
from harness import child
from harness.kubeapi import LOOPBACK, KubeAPI, _listening_sockets
from tools import toolchain

BINARY = "openstack-cloud-controller-manager"
# What OpenShift runs: its Deployment names no --controllers, so upstream's defaults ("*"), of which
# route does nothing under --configure-cloud-routes=false (k8s.io/cloud-provider names.CCMControllerAliases).
CONTROLLERS = ("cloud-node", "cloud-node-lifecycle", "service")
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"  # k8s.io/cloud-provider api.TaintExternalCloudProvider
PROVIDED_NODE_IP = "alpha.kubernetes.io/provided-node-ip"  # api.AnnotationAlphaProvidedIPAddr
BOOTSTRAP_MANIFEST = "/opt/openshift/manifests/cloud-provider-config.yaml"
BOOTSTRAP_CREDENTIALS = "/opt/openshift/openshift/99_cloud-creds-secret.yaml"
# The CCM operator's [Global] keys from the in-tree provider: each must hold this value, or it refuses the config.
LEGACY_GLOBAL = {"secret-name": "openstack-credentials", "secret-namespace": "kube-system", "kubeconfig-path": ""}
CLOUD_NAME = "openstack"  # the installer's name for the one cloud of its clouds.yaml (osmachine.CloudName)


class CCMError(Exception):
    pass


def missing() -> str | None:
    """Why the controller cannot run here (for pytest.skip), or None."""
    return None if toolchain.binary(BINARY) else toolchain.missing(BINARY)


# --------------------------------------------------------------------------- what the cluster holds


@dataclass(frozen=True)
class InstallerFiles:
    """ConfigMap openshift-config/cloud-provider-config (`config`, and `ca-bundle.pem` when the
    cloud's CA is given) and the clouds.yaml of secret kube-system/openstack-credentials."""

    config: str
    clouds_yaml: str
    ca_bundle: str | None = None

    @classmethod
    def from_bootstrap(cls, ignition: dict) -> InstallerFiles:
        files = {entry["path"]: entry for entry in ignition["storage"]["files"]}
        for path in (BOOTSTRAP_MANIFEST, BOOTSTRAP_CREDENTIALS):
            if path not in files:
                raise CCMError(f"the bootstrap's Ignition config holds no {path}: is it an integrated stack's?")
        config_map = yaml.safe_load(file_contents(files[BOOTSTRAP_MANIFEST]) or b"")
        secret = yaml.safe_load(file_contents(files[BOOTSTRAP_CREDENTIALS]) or b"")
        data = config_map.get("data") or {}
        clouds = (secret.get("stringData") or {}).get("clouds.yaml") or base64.b64decode(secret["data"]["clouds.yaml"]).decode()
        return cls(config=data["config"], clouds_yaml=clouds, ca_bundle=data.get("ca-bundle.pem"))


# --------------------------------------------------------------------------- what OpenShift makes of it


_HEADER = re.compile(r'\s*\[\s*([A-Za-z][A-Za-z0-9-]*)(?:\s+"([^"]*)")?\s*\]\s*(?:[#;].*)?')
_SETTING = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*?)\s*)?")


def _sections(text: str) -> list[tuple[str | None, list[str]]]:
    """The INI's lines by section, in order: (its name, `LoadBalancerClass "x"` for a subsection, or None
    before any header; its lines, the header first). Names as written: go-ini, the operator's, is case-sensitive."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.splitlines():
        header = _HEADER.fullmatch(line)
        if header:
            sections.append((f'{header[1]} "{header[2]}"' if header[2] is not None else header[1], [line]))
        else:
            sections[-1][1].append(line)
    return sections


def _key(line: str) -> str | None:
    found = _SETTING.fullmatch(line.split("#")[0].split(";")[0]) if line.strip()[:1] not in ("#", ";") else None
    return found[1] if found else None


def _value(line: str) -> str:
    found = _SETTING.fullmatch(line.split("#")[0].split(";")[0]) if '"' not in line else _SETTING.fullmatch(line)
    value = (found[2] or "") if found else ""
    return value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value


def operator_config(source: str, clouds_file: Path) -> str:
    """The cloud.conf the CCM operator hands the controller (ConfigMap openshift-cloud-controller-manager/
    cloud-conf): the installer's config with [Global]'s in-tree keys checked and dropped and the
    controller sent to the clouds.yaml (use-clouds, clouds-file, cloud), [BlockStorage] dropped (the
    Cinder CSI driver's), [LoadBalancer]'s use-octavia dropped and OpenShift's defaults added where the
    user set none: max-shared-lb = 1, manage-security-groups = true. Lines are kept as written (go-ini
    rewrites their spacing: the program writes only lines it reads alike, cluster/cloud_provider_config.py)."""
    sections = _sections(source)
    names = [name for name, _ in sections]
    if "Global" not in names:  # made, at the end, and nothing to check in it
        sections.append(("Global", ["", "[Global]"]))
    added = {"use-clouds": "true", "clouds-file": str(clouds_file), "cloud": CLOUD_NAME}
    out: list[str] = []
    for name, lines in sections:
        if name == "BlockStorage":
            continue
        if name == "Global":
            given = {_key(line): _value(line) for line in lines if _key(line)}
            for key, wanted in LEGACY_GLOBAL.items():
                if "Global" in names and given.get(key, "") != wanted:
                    raise CCMError(f"the CCM operator refuses this config: '[Global] {key}' is set to a non-default value")
            kept = [line for line in lines if _key(line) not in (*LEGACY_GLOBAL, *added)]
            lines = _before_blanks(kept, [f"{key} = {value}" for key, value in added.items()])
        if name == "LoadBalancer":
            kept = [line for line in lines if _key(line) != "use-octavia"]
            given_keys = {_key(line) for line in kept}
            defaults = [f"{key} = {value}" for key, value in (("max-shared-lb", "1"), ("manage-security-groups", "true")) if key not in given_keys]
            lines = _before_blanks(kept, defaults)
        out += lines
    if "LoadBalancer" not in names:
        out += ["", "[LoadBalancer]", "max-shared-lb = 1", "manage-security-groups = true"]
    return "\n".join(out).strip("\n") + "\n"


def _before_blanks(lines: list[str], added: list[str]) -> list[str]:
    """`added` after a section's last setting, before the blank lines that end it."""
    end = len(lines)
    while end > 1 and not lines[end - 1].strip():
        end -= 1
    return [*lines[:end], *added, *lines[end:]]


def credentials(clouds_yaml: str, ca_file: Path | None) -> str:
    """The clouds.yaml of secret openshift-cloud-controller-manager/openstack-cloud-credentials: the cloud
    credential operator copies the installer's (key clouds.yaml) as it is. Its cacert, where set, names
    the path the installer gave it on the masters (the ConfigMap's ca-bundle.pem): here `ca_file`."""
    clouds = yaml.safe_load(clouds_yaml)
    cloud = clouds["clouds"][CLOUD_NAME]
    if cloud.get("cacert"):
        if ca_file is None:
            raise CCMError("the clouds.yaml names a CA file but the cloud provider's ConfigMap holds no ca-bundle.pem")
        cloud["cacert"] = str(ca_file)
    return yaml.safe_dump(clouds, sort_keys=False)


# --------------------------------------------------------------------------- the controller


@dataclass
class CloudController:
    """A running openstack-cloud-controller-manager and what it was given, in `directory`."""

    directory: Path
    cloud_conf: Path
    arguments: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = None

    def log(self, lines: int = 40) -> str:
        path = self.directory / "ccm.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.is_file() else ""

    def listening(self) -> set[str]:
        """The TCP addresses (ip:port) it listens on, from /proc."""
        assert self.process is not None
        sockets = _listening_sockets()
        found = set()
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{self.process.pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{self.process.pid}/fd/{fd}")
                    if target.startswith("socket:[") and target[8:-1] in sockets:
                        found.add(sockets[target[8:-1]])
        return found

    def stop(self, grace: float = 15) -> None:
        if self.process is not None:
            child.stop(self.process, grace)


def arguments(kubeconfig: Path, cloud_conf: Path, cluster_name: str, controllers: tuple[str, ...] = CONTROLLERS) -> list[str]:
    return [
        "--v=2",  # OpenShift runs --v=1; 2 logs each node initialized and each load balancer step
        f"--cloud-config={cloud_conf}",
        "--cloud-provider=openstack",
        f"--cluster-name={cluster_name}",  # the infra ID, from OpenShift 4.16
        # OpenShift: true, each controller with its service account under RBAC the CCM operator installs, which
        # nothing here does: the controllers act with the kubeconfig's (admin) client instead.
        "--use-service-account-credentials=false",
        "--configure-cloud-routes=false",
        f"--bind-address={LOOPBACK}",
        "--secure-port=0",
        # OpenShift: in-cluster config and leader election between two replicas; here one process and a kubeconfig.
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        f"--controllers={','.join(controllers)}",
    ]


@contextlib.contextmanager
def running(
    kubeconfig: Path, files: InstallerFiles, cluster_name: str, directory: Path, *, controllers: tuple[str, ...] = CONTROLLERS, settle: float = 3
) -> Iterator[CloudController]:
    """The controller against the API server of `kubeconfig` (a harness.kubeapi one's), configured from
    `files` as OpenShift configures it; stopped (by its PID) on leaving, whatever happens. It is taken as
    started once it has run `settle` seconds: a config it cannot read, or a cloud it cannot authenticate
    to, ends it before (CCMError with its log)."""
    binary = toolchain.binary(BINARY)
    if binary is None:
        raise CCMError(toolchain.missing(BINARY))
    directory.mkdir(parents=True, exist_ok=True)
    secret = directory / "secret"
    secret.mkdir(exist_ok=True)
    ca_file = None
    if files.ca_bundle:
        ca_file = directory / "ca-bundle.pem"
        ca_file.write_text(files.ca_bundle)
    clouds_file = secret / "clouds.yaml"
    clouds_file.write_text(credentials(files.clouds_yaml, ca_file))
    clouds_file.chmod(0o600)
    cloud_conf = directory / "cloud.conf"
    cloud_conf.write_text(operator_config(files.config, clouds_file))
    controller = CloudController(directory, cloud_conf, arguments(kubeconfig, cloud_conf, cluster_name, controllers))
    # Nothing of the caller's environment (OS_CLOUD and the like): the controller reads only its files.
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(directory)}
    try:
        with open(directory / "ccm.log", "ab") as log:
            controller.process = subprocess.Popen(
                [str(binary), *controller.arguments], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=directory, env=environment
            )
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            if controller.process.poll() is not None:
                raise CCMError(f"{BINARY} exited ({controller.process.returncode}):\n{controller.log()}")
            time.sleep(0.2)
        yield controller
    finally:
        controller.stop()


# --------------------------------------------------------------------------- nodes as kubelets register them


def register_node(api: KubeAPI, name: str, *, role: str, node_ips: tuple[str, ...] = ()) -> None:
    """The Node a kubelet run with --cloud-provider=external registers (k8s.io/kubernetes pkg/kubelet:
    initialNode, nodestatus.NodeAddress): its name and hostname label, os and arch labels, the role
    OpenShift's kubelet adds (--node-labels), the uninitialized taint the cloud node controller removes;
    given --node-ip (OpenShift's nodeip-configuration gives one on OpenStack, both families' on a
    dual-stack node) the provided-node-ip annotation and those addresses before the hostname, else
    the hostname alone."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", f"node-role.kubernetes.io/{role}": "",
            },
            "annotations": {PROVIDED_NODE_IP: ",".join(node_ips)} if node_ips else {},
        },
        "spec": {"taints": [{"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"}]},
        "status": {"addresses": [*({"type": "InternalIP", "address": ip} for ip in node_ips), {"type": "Hostname", "address": name}]},
    }
    api.kubectl("create", "-f", "-", input=json.dumps(node))


def nodes(api: KubeAPI) -> dict[str, dict]:
    """Every Node as the API holds it, by name."""
    listed = json.loads(api.kubectl("get", "nodes", "-o", "json").stdout)
    return {item["metadata"]["name"]: item for item in listed["items"]}


def initialized(node: dict) -> bool:
    """The cloud node controller took the node: its taint gone, its providerID set (one update)."""
    tainted = any(taint["key"] == UNINITIALIZED for taint in node["spec"].get("taints") or [])
    return not tainted and bool(node["spec"].get("providerID"))


def wait_initialized(api: KubeAPI, controller: CloudController, names: list[str], timeout: float = 120) -> dict[str, dict]:
    """The Nodes once the controller has initialized each; CCMError with its log if it has not within
    `timeout`, or it ended. (Their addresses it patches right after, in the same sync.)"""
    deadline = time.monotonic() + timeout
    while True:
        found = nodes(api)
        pending = sorted(name for name in names if not (name in found and initialized(found[name])))
        if not pending:
            return {name: found[name] for name in names}
        assert controller.process is not None
        if controller.process.poll() is not None or time.monotonic() > deadline:
            raise CCMError(f"nodes not initialized: {pending}; {BINARY} (exit {controller.process.returncode}):\n{controller.log(60)}")
        time.sleep(1)


# --------------------------------------------------------------------------- Services


def create_load_balancer_service(api: KubeAPI, namespace: str, name: str, port: int = 80) -> dict:
    """A Service of type LoadBalancer (TCP `port` to the pods' 8080) in its namespace, made if need be; as
    the API server holds it (its UID and the node port it allocated)."""
    if api.kubectl("get", "namespace", namespace, check=False).returncode != 0:
        api.kubectl("create", "namespace", namespace)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": [{"name": "http", "protocol": "TCP", "port": port, "targetPort": 8080}]},
    }
    return json.loads(api.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(service)).stdout)


def wait_load_balancer(api: KubeAPI, controller: CloudController, namespace: str, name: str, timeout: float = 300) -> dict:
    """The Service once the controller has given it its load balancer's address (status.loadBalancer.ingress);
    CCMError with the controller's log if not within `timeout`, or it ended."""
    deadline = time.monotonic() + timeout
    while True:
        service = json.loads(api.kubectl("get", "service", name, "-n", namespace, "-o", "json").stdout)
        if (service.get("status", {}).get("loadBalancer") or {}).get("ingress"):
            return service
        assert controller.process is not None
        if controller.process.poll() is not None or time.monotonic() > deadline:
            raise CCMError(f"Service {namespace}/{name} has no load balancer; {BINARY} (exit {controller.process.returncode}):\n{controller.log(80)}")
        time.sleep(2)

"""The contract with `openshift-install`, in one place. Pure Python.

- what the program gives it: `install-config.yaml` (`render_install_config`);
- what it leaves behind: `ASSET_FILES`, parsed into `InstallerAssets`;
- how those reach the program: the run script prints every file as a `<path> <base64>`
  line (`bundle`), plus two lines of its own: the install record (when, which generation,
  the stack's settings at install time) and the release payload's images;
- the run script itself (`run_script`), built from `ASSET_FILES`;
- whether a set of configs belongs to this stack (`check_assets`).

The installer runs once per cluster (see components/installer.py): its output, kept in
Pulumi state, is what every later run builds nodes from and compares the stack against.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
from fnmatch import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import yaml

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig
from cluster.dataurl import file_contents
from cluster.identity import ClusterIdentity

ASSET_FILES = (
    "bootstrap.ign",
    "master.ign",
    "worker.ign",
    "metadata.json",
    "auth/kubeconfig",
    "auth/kubeadmin-password",
)
# Lines the run script adds to the installer's files.
RECORD_FILE = "ocp-install-record.json"
RELEASE_FILE = "ocp-release-images.json"
# Images of the release payload the on-node networking runs (platform none), by payload name.
RELEASE_COMPONENTS = ("keepalived-ipfailover", "haproxy-router", "coredns")
# Integrated mode is UPI: the machines are this program's, so the installer's Machine and
# MachineSet manifests go before the ignition configs are made (install_upi.md for OpenStack).
UPI_REMOVED_MANIFESTS = (
    "openshift/99_openshift-cluster-api_master-machines-*.yaml",
    "openshift/99_openshift-cluster-api_worker-machineset-*.yaml",
    "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml",
)
# Marks a directory the run script made, so it never deletes one it did not.
DIR_MARKER = ".ocp-pulumi-installer-dir"
# The bundle as last printed, kept beside the configs for the command's update path.
KEPT_BUNDLE = ".ocp-pulumi-bundle"
# Where the bootstrap's config carries the install-config the installer consumed.
CLUSTER_CONFIG_MANIFEST = "/opt/openshift/manifests/cluster-config.yaml"
# Several certificates in the configs are valid 24 hours; leave time to boot.
MAX_BOOTSTRAP_AGE_HOURS = 20
# The ClusterVersion the bootstrap hands over: its channel (stable-4.19) names the release's minor.
CVO_OVERRIDES_MANIFEST = "/opt/openshift/manifests/cvo-overrides.yaml"
# From this minor on, once any MachineSet exists, the MCO re-signs the machine config server's
# certificate with a CA of its own and rewrites the user-data secrets (MCO release-4.19
# pkg/controller/certrotation): the installer's worker pointer then fails TLS on new nodes.
MCS_CA_ROTATION_MINOR = 19
# Where the running cluster keeps the worker pointer it trusts (all releases this program installs).
WORKER_POINTER_SECRET = ("openshift-machine-api", "worker-user-data-managed", "userData")


def install_config(config: ClusterConfig, plan: AddressPlan, pull_secret: str, clouds_yaml_ca: str | None = None) -> dict[str, Any]:
    """Integrated (OpenStack's default): `platform: openstack`, UPI style: the cluster gets the
    cloud provider, Cinder and the Machine API, and the MCO runs the VIPs; this program makes
    the machines. Standalone and libvirt: `platform: none`: the installer talks to no cloud and
    renders no VIP/LB/DNS pods; this program brings keepalived, haproxy and CoreDNS itself.

    `clouds_yaml_ca`: the PEM that the clouds.yaml entry's `cacert` names (integrated mode)."""
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "baseDomain": config.base_domain,
        "metadata": {"name": config.cluster_name},
        "networking": {
            "networkType": "OVNKubernetes",
            "machineNetwork": [{"cidr": str(config.machine_network)}],
            "clusterNetwork": [
                {"cidr": str(config.cluster_network.cidr), "hostPrefix": config.cluster_network.host_prefix}
            ],
            "serviceNetwork": [str(config.service_network)],
        },
        "controlPlane": {
            "name": "master",
            "hyperthreading": "Enabled",
            "replicas": config.masters.count,
            **_machine_pool(config, "masters"),
        },
        # Always 0: the machines are ours. Masters' schedulability is set by ignition.nodes.
        "compute": [{"name": "worker", "hyperthreading": "Enabled", "replicas": 0, **_machine_pool(config, "workers")}],
        "platform": _platform(config, plan),
        "pullSecret": pull_secret,
        "sshKey": config.ssh_key,
    }
    if config.proxy is not None:
        proxy = {
            "httpProxy": config.proxy.http_proxy,
            "httpsProxy": config.proxy.https_proxy,
            "noProxy": ",".join(config.proxy.no_proxy) or None,
        }
        document["proxy"] = {key: value for key, value in proxy.items() if value}
    bundles = [b for b in (config.additional_trust_bundle, config.openstack.ca_bundle if config.openstack else None) if b]
    if bundles and clouds_yaml_ca and config.integrated:
        # The installer gives the cloud provider additionalTrustBundle *instead of* the
        # clouds.yaml cacert when both exist: keep the cloud's CA in it.
        bundles.append(clouds_yaml_ca)
    if bundles:
        # A bundle given twice (caBundle is often the very cacert file) is written once; each ends
        # in exactly one newline, as the installer refuses anything after the last block.
        document["additionalTrustBundle"] = "".join(dict.fromkeys(b.strip() + "\n" for b in bundles))
        # Without a proxy the bundle would reach only the installer's own use, not the
        # cluster-wide trusted CA; Always puts it there.
        document["additionalTrustBundlePolicy"] = "Always"
    if config.fips:
        document["fips"] = True
    if config.capabilities is not None:
        capabilities = config.capabilities.model_dump(by_alias=True, exclude_defaults=True, mode="json")
        document["capabilities"] = capabilities
    if config.image_digest_sources:
        document["imageDigestSources"] = [
            {"source": item.source, "mirrors": list(item.mirrors)} for item in config.image_digest_sources
        ]
    return document


def cloud_ca_bundle(config: ClusterConfig, clouds_yaml_ca: str | None) -> str | None:
    """The CA(s) the cloud's endpoints are signed by: the clouds.yaml `cacert` and (integrated mode)
    ocp:openstack.caBundle, each once, each ending in one newline. Integrated mode puts them in the
    bootstrap's cloud-ca-cert.pem, as IPI does; the Glance shim trusts them to fetch the config."""
    if config.openstack is None:
        return None
    bundles = [b for b in (clouds_yaml_ca, config.openstack.ca_bundle) if b]
    return "".join(dict.fromkeys(b.strip() + "\n" for b in bundles)) or None


def _platform(config: ClusterConfig, plan: AddressPlan) -> dict[str, Any]:
    if not config.integrated:
        return {"none": {}}
    assert config.openstack is not None
    # The plural VIP lists: the singular apiVIP/ingressVIP and machinesSubnet are deprecated.
    openstack: dict[str, Any] = {
        "cloud": config.openstack.cloud,
        "apiVIPs": [str(plan.api_vip)],
        "ingressVIPs": [str(plan.ingress_vip)],
    }
    if config.openstack.external_network is not None:
        openstack["externalNetwork"] = config.openstack.external_network  # LoadBalancer Services' floating IPs
    # An existing Glance image by name: the installer checks it and names it in the Machine
    # manifests (a URL would make it upload one); the image the masters boot.
    openstack["clusterOSImage"] = config.masters.openstack_image
    return {"openstack": openstack}


def _machine_pool(config: ClusterConfig, role: str) -> dict[str, Any]:
    """Integrated mode: the pool as the installer validates it against the cloud (it needs a
    flavor even for 0 replicas) and as Machine API manifests would carry it. The machines are
    this program's; these values describe them."""
    if not config.integrated:
        return {}
    assert config.openstack is not None
    section = getattr(config, role)
    pool: dict[str, Any] = {
        "type": config.worker_pool_flavor if role == "workers" else section.flavor,
        "serverGroupPolicy": section.server_group_policy,
    }
    if section.availability_zones:
        pool["zones"] = list(section.availability_zones)
    if section.root_volume is not None:
        volume: dict[str, Any] = {"size": section.root_volume.size, "type": section.root_volume.type}
        if section.root_volume.availability_zones:
            volume["zones"] = list(section.root_volume.availability_zones)
        pool["rootVolume"] = volume
    if config.openstack.additional_network_ids:
        pool["additionalNetworkIDs"] = list(config.openstack.additional_network_ids)
    if config.openstack.additional_security_group_ids:
        pool["additionalSecurityGroupIDs"] = list(config.openstack.additional_security_group_ids)
    return {"platform": {"openstack": pool}}


def render_install_config(config: ClusterConfig, plan: AddressPlan, pull_secret: str, clouds_yaml_ca: str | None = None) -> str:
    document = install_config(config, plan, pull_secret, clouds_yaml_ca)
    return yaml.safe_dump(document, sort_keys=True, default_flow_style=False)


# --------------------------------------------------------------------------- the run script


# A FIPS cluster needs an installer built FIPS-capable (the `fipscapable` tag: dynamically linked
# to the host's OpenSSL) on a host in FIPS mode; the installer checks both only once it validates
# the install-config (pkg/hostcrypt). Only a build without the tag carries this message.
NOT_FIPS_CAPABLE = "use the FIPS-capable installer binary"
FIPS_CHECK = (
    'host=$(cat "${OCP_FIPS_STATE_FILE:-/proc/sys/crypto/fips_enabled}" 2>/dev/null || echo 0); why=""; '
    # A wrapper script (#!) cannot be judged: the installer's own check still stands.
    f'if [ "$(head -c2 "$OPENSHIFT_INSTALL" 2>/dev/null)" != "#!" ] && grep -qaF "{NOT_FIPS_CAPABLE}" "$OPENSHIFT_INSTALL"; then why="$OPENSHIFT_INSTALL is not built FIPS-capable (openshift-install-fips from the release payload, or the openshift-install-rhel9 archive)"; fi; '
    'if [ "$host" != 1 ]; then why="${why:+$why, and }this host is not in FIPS mode (fips-mode-setup --enable, then reboot)"; fi; '
    'if [ -n "$why" ]; then echo "ocp:fips: true, but $why: the installer refuses to make a FIPS cluster otherwise. Run pulumi up where both hold, or set ocp:fips: false" >&2; exit 3; fi'
)


def run_script() -> str:
    """Runs `openshift-install create ignition-configs` in a directory it owns and prints the
    bundle. Constant text: the environment carries everything that differs per stack."""
    files = " ".join(shlex.quote(name) for name in ASSET_FILES)
    removed = " ".join(f'"$dir"/{pattern}' for pattern in UPI_REMOVED_MANIFESTS)
    return f"""set -eu
umask 077
dir=$INSTALLER_DIR
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ] && [ ! -e "$dir/{DIR_MARKER}" ]; then
  echo "ocp:installer.dir: $dir exists and was not made by this program (no {DIR_MARKER}): refusing to delete it; name a new directory" >&2
  exit 3
fi
if [ "${{FIPS:-false}}" = true ] && [ -z "${{OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION:-}}" ]; then
  {FIPS_CHECK}
fi
rm -rf "$dir" && mkdir -p "$dir" && : > "$dir/{DIR_MARKER}"
printf '%s' "$INSTALL_CONFIG" > "$dir/install-config.yaml"
if [ -n "${{CLOUD_CA_BUNDLE:-}}" ]; then
  printf '%s' "$CLOUD_CA_BUNDLE" > "$dir/.cloud-ca.pem" && export OS_CACERT="$dir/.cloud-ca.pem"
fi
if [ "$PLATFORM" = openstack ] || [ -n "${{EXTRA_MANIFESTS:-}}" ]; then
  "$OPENSHIFT_INSTALL" create manifests --dir "$dir" >&2
  if [ "$PLATFORM" = openstack ]; then rm -f -- {removed}; fi
  # The stack's own (ocp:ntpServers, ocp:installer.extraManifests): one "name base64" per line.
  printf '%s\n' "${{EXTRA_MANIFESTS:-}}" | while read -r name data; do
    if [ -z "$name" ]; then continue; fi
    if [ -e "$dir/openshift/$name" ]; then
      echo "ocp:installer.extraManifests: $name would replace the installer's own openshift/$name: rename it" >&2
      exit 3
    fi
    printf '%s' "$data" | base64 -d > "$dir/openshift/$name"
  done
fi
"$OPENSHIFT_INSTALL" create ignition-configs --dir "$dir" >&2
generated_at=$(date -u +%s)
release=$("$OPENSHIFT_INSTALL" version | sed -n 's/^release image //p')
images=""
if [ -n "$RELEASE_COMPONENTS" ]; then
  printf '%s' "$PULL_SECRET" > "$dir/.pull-secret.json"
  for name in $RELEASE_COMPONENTS; do
    image=$("$OC" adm release info --registry-config="$dir/.pull-secret.json" --image-for="$name" "$release")
    images="$images${{images:+,}}\\"$name\\":\\"$image\\""
  done
  rm -f "$dir/.pull-secret.json"
fi
{{
  for f in {files}; do printf '%s ' "$f"; base64 -w0 "$dir/$f"; echo; done
  printf '{RECORD_FILE} '
  printf '{{"generatedAt":%s,"generation":%s,"stack":%s}}' "$generated_at" "$GENERATION" "$INSTALL_FACTS" | base64 -w0; echo
  printf '{RELEASE_FILE} '
  printf '{{"release":"%s","images":{{%s}}}}' "$release" "$images" | base64 -w0; echo
}} > "$dir/{KEPT_BUNDLE}"
cat "$dir/{KEPT_BUNDLE}"
"""


def read_script() -> str:
    """For configs the user generated (`installer.assetsDir`): prints the same bundle from the
    directory, once, so that they too live in Pulumi state from then on."""
    files = " ".join(shlex.quote(name) for name in ASSET_FILES)
    return f"""set -eu
dir=$ASSETS_DIR
missing=""
for f in {files}; do [ -f "$dir/$f" ] || missing="$missing $f"; done
if [ -n "$missing" ]; then
  echo "ocp:installer.assetsDir: $dir lacks$missing: point it at the --dir of \`openshift-install create ignition-configs\`" >&2
  exit 3
fi
for f in {files}; do printf '%s ' "$f"; base64 -w0 "$dir/$f"; echo; done
printf '{RECORD_FILE} '
printf '{{"generatedAt":%s,"generation":%s,"stack":%s}}' "$(stat -c %Y "$dir/bootstrap.ign")" "$GENERATION" "$INSTALL_FACTS" | base64 -w0; echo
if [ -f "$dir/{RELEASE_FILE}" ]; then printf '{RELEASE_FILE} '; base64 -w0 "$dir/{RELEASE_FILE}"; echo; fi
"""


def update_script() -> str:
    """pulumi-command's update path: re-print the bundle kept beside the configs. Never the
    previous stdout from the environment: at ~400 KB, Linux refuses it (one string >= 128 KiB)."""
    return f"""set -eu
if [ ! -r "$INSTALLER_DIR/{KEPT_BUNDLE}" ]; then
  echo "the installer's output is kept in Pulumi state, but this update would replace it and $INSTALLER_DIR/{KEPT_BUNDLE} is not here to re-print: undo the change to the installer command's inputs" >&2
  exit 3
fi
cat "$INSTALLER_DIR/{KEPT_BUNDLE}"
"""


def run_environment(
    config: ClusterConfig,
    stack: str,
    install_config_text: str,
    pull_secret: str,
    facts: Mapping[str, Any],
    manifests: Mapping[str, bytes] | None = None,
) -> dict[str, str]:
    """The script's environment (`run_script`, or `read_script` for installer.assetsDir);
    every value stays far below Linux's 128 KiB per string."""
    installer = config.installer
    common = {
        "GENERATION": str(installer.generation),
        "INSTALL_FACTS": json.dumps(facts, sort_keys=True, separators=(",", ":")),
    }
    if installer.assets_dir is not None:
        return {"ASSETS_DIR": installer.assets_dir, **common}
    assert installer.binary is not None
    environment = {
        "OPENSHIFT_INSTALL": installer.binary,
        "OC": installer.oc,
        "INSTALLER_DIR": installer_dir(config, stack),
        "INSTALL_CONFIG": install_config_text,
        "PULL_SECRET": pull_secret,
        "PLATFORM": "openstack" if config.integrated else "none",
        "RELEASE_COMPONENTS": " ".join(release_lookups(config)),
        **common,
    }
    if config.fips:
        environment["FIPS"] = "true"
    if manifests:  # between `create manifests` and `create ignition-configs`
        environment["EXTRA_MANIFESTS"] = "\n".join(
            f"{name} {base64.b64encode(data).decode()}" for name, data in sorted(manifests.items())
        )
    if config.integrated:
        assert config.openstack is not None
        environment["OS_CLOUD"] = config.openstack.cloud  # the installer validates against the cloud
        if config.openstack.ca_bundle is not None:
            environment["CLOUD_CA_BUNDLE"] = config.openstack.ca_bundle
    return environment


def worker_pointer_script() -> str:
    """A worker's pointer config on stdout, run once, when its server is made: the installer's
    (POINTER_SOURCE=install), or the one the running cluster serves, read through its API with
    the stack's kubeconfig. No server without it: a failure names what to do."""
    namespace, name, key = WORKER_POINTER_SECRET
    return f"""set -eu
if [ "$POINTER_SOURCE" = install ]; then printf '%s' "$INSTALL_POINTER"; exit 0; fi
umask 077
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '%s' "$KUBECONFIG_DATA" > "$scratch/kubeconfig"
refuse() {{
  echo "ocp:workers.count: $SERVER cannot be created: on OpenShift 4.{MCS_CA_ROTATION_MINOR} and later the machine config operator may have rotated the CA of its config server (once any MachineSet exists), so a new worker boots from the pointer config in secret {namespace}/{name}, and $1. Make the API ($API_URL) reachable from where \\`pulumi up\\` runs (ocp:openstack.apiFloatingIp, the etcHosts output) and ocp:installer.oc a working oc, or leave ocp:workers.count as it was" >&2
  exit 3
}}
if ! encoded=$("$OC" --kubeconfig="$scratch/kubeconfig" --request-timeout=30s get secret {name} -n {namespace} -o 'jsonpath={{.data.{key}}}' 2>"$scratch/error"); then
  refuse "reading it through the cluster's API failed: $(tr '\\n' ' ' < "$scratch/error" | cut -c1-400)"
fi
pointer=$(printf '%s' "$encoded" | base64 -d 2>/dev/null) || refuse "its {key} is not base64"
case "$pointer" in '{{'*'"ignition"'*) ;; *) refuse "its {key} is not an Ignition config";; esac
printf '%s' "$pointer"
"""


def worker_pointer_environment(
    config: ClusterConfig, assets: InstallerAssets, server: str, from_cluster: bool
) -> dict[str, str]:
    """The environment of `worker_pointer_script` for one worker (a secret: the kubeconfig)."""
    if not from_cluster:
        return {"POINTER_SOURCE": "install", "INSTALL_POINTER": json.dumps(assets.worker, sort_keys=True, separators=(",", ":"))}
    kubeconfig = yaml.safe_load(assets.kubeconfig) or {}
    api = next((c.get("cluster", {}).get("server", "") for c in kubeconfig.get("clusters") or []), "")
    return {
        "POINTER_SOURCE": "cluster",
        "KUBECONFIG_DATA": assets.kubeconfig,
        "OC": config.installer.oc,
        "SERVER": server,
        "API_URL": api,
    }


def release_lookups(config: ClusterConfig) -> tuple[str, ...]:
    """The payload images the program reads with `oc adm release info`: the on-node networking's
    (standalone and libvirt), but those ocp:networking.images names, so naming all three needs no oc."""
    if config.integrated:  # the MCO brings them itself
        return ()
    return tuple(name for name in RELEASE_COMPONENTS if name not in config.networking.images)


def worker_images_script() -> str:
    """The payload images a worker's static pods run, as JSON on stdout, run once, when its server
    is made: the install's (IMAGES_SOURCE=install), or those of the release the running cluster is
    at (its ClusterVersion's desired image), read through its API with the stack's kubeconfig:
    after an upgrade a new worker runs what the MCO gives the others, not images a pruned mirror
    may have dropped. No server without them: a failure names what to do."""
    return r"""set -eu
if [ "$IMAGES_SOURCE" = install ]; then printf '%s' "$INSTALL_IMAGES"; exit 0; fi
umask 077
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '%s' "$KUBECONFIG_DATA" > "$scratch/kubeconfig"
printf '%s' "$PULL_SECRET" > "$scratch/pull-secret.json"
refuse() {
  echo "ocp:workers.count: no static pod images for $SERVER (a stack made before these lookups reads them once for each running worker, which does not change): a worker made after install runs the keepalived, haproxy and CoreDNS images of the release the cluster runs now (the install's may miss every fix since, or be gone from a pruned mirror), and $1. Make the API ($API_URL) reachable from where \`pulumi up\` runs and ocp:installer.oc a working oc, name the running release's images in ocp:networking.images, or leave ocp:workers.count as it was" >&2
  exit 3
}
release=$("$OC" --kubeconfig="$scratch/kubeconfig" --request-timeout=30s get clusterversion version -o 'jsonpath={.status.desired.image}' 2>"$scratch/error") \
  || refuse "reading the cluster's release through its API failed: $(tr '\n' ' ' < "$scratch/error" | cut -c1-400)"
[ -n "$release" ] || refuse "the cluster's ClusterVersion names no desired release image"
images=""
for name in $COMPONENTS; do
  image=$("$OC" adm release info --registry-config="$scratch/pull-secret.json" --image-for="$name" "$release" 2>"$scratch/error") \
    || refuse "reading $name of $release failed: $(tr '\n' ' ' < "$scratch/error" | cut -c1-400)"
  images="$images${images:+,}\"$name\":\"$image\""
done
printf '{%s}' "$images"
"""


def worker_images_environment(
    config: ClusterConfig, assets: InstallerAssets, server: str, from_cluster: bool
) -> dict[str, str]:
    """The environment of `worker_images_script` for one worker (a secret: kubeconfig, pull secret)."""
    if not from_cluster:
        return {"IMAGES_SOURCE": "install", "INSTALL_IMAGES": json.dumps(dict(assets.release_images), sort_keys=True, separators=(",", ":"))}
    kubeconfig = yaml.safe_load(assets.kubeconfig) or {}
    api = next((c.get("cluster", {}).get("server", "") for c in kubeconfig.get("clusters") or []), "")
    return {
        "IMAGES_SOURCE": "cluster",
        "KUBECONFIG_DATA": assets.kubeconfig,
        "PULL_SECRET": config.pull_secret.get_secret_value(),
        "OC": config.installer.oc,
        "COMPONENTS": " ".join(release_lookups(config)),
        "SERVER": server,
        "API_URL": api,
    }


def upi_manifests(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """What the run script leaves of `create manifests` in integrated mode (for the mocks)."""
    return {name: data for name, data in files.items() if not any(fnmatch(name, p) for p in UPI_REMOVED_MANIFESTS)}


def installer_dir(config: ClusterConfig, stack: str) -> str:
    return config.installer.dir or f"assets/{stack}"


def gather_bootstrap_command(config: ClusterConfig, plan: AddressPlan, stack: str, bootstrap_host: str) -> str:
    """`openshift-install gather bootstrap` as it runs where `pulumi up` runs: SSH to the
    bootstrap, and through it to the masters; the log bundle lands in the installer's --dir."""
    installer = config.installer
    directory = installer.assets_dir or installer_dir(config, stack)
    words = [installer.binary or "openshift-install", "gather", "bootstrap", "--dir", directory, "--bootstrap", bootstrap_host]
    for master in plan.masters:
        words += ["--master", str(master.ip)]
    if config.bootstrap.helper.ssh_private_key_file:
        words += ["--key", config.bootstrap.helper.ssh_private_key_file]
    return shlex.join(words)


# --------------------------------------------------------------------------- the installer's output


@dataclass(frozen=True)
class InstallRecord:
    """When the configs were made, which generation, and the stack's settings then (absent
    for configs the user generated: only what the configs themselves say is known)."""

    generated_at: float
    generation: int = 1
    stack: Mapping[str, Any] | None = None

    def age_hours(self, now: float) -> float:
        return (now - self.generated_at) / 3600


@dataclass(frozen=True)
class InstallerAssets:
    bootstrap: dict[str, Any]
    master: dict[str, Any]
    worker: dict[str, Any]
    metadata: dict[str, Any]
    kubeconfig: str
    kubeadmin_password: str
    record: InstallRecord | None = None
    release_image: str | None = None
    release_images: Mapping[str, str] = field(default_factory=dict)

    @property
    def infra_id(self) -> str:
        return self.metadata["infraID"]

    @property
    def identity(self) -> ClusterIdentity:
        # The kubeadmin password is random per installer run and secret: a fine root for
        # per-cluster secrets such as the VRRP password.
        root = hashlib.sha256(b"ocp-cluster-secret\0" + self.kubeadmin_password.encode()).digest()
        return ClusterIdentity(
            infra_id=self.infra_id, secret=root, release_image=self.release_image, release_images=self.release_images
        )

    @property
    def install_config(self) -> dict[str, Any]:
        """The install-config the installer consumed, as the bootstrap hands it to the cluster
        (`cluster-config-v1`); without the pull secret."""
        for entry in self.bootstrap.get("storage", {}).get("files", []):
            if entry.get("path") == CLUSTER_CONFIG_MANIFEST:
                manifest = yaml.safe_load(file_contents(entry) or b"{}") or {}
                return yaml.safe_load(manifest.get("data", {}).get("install-config", "")) or {}
        return {}

    @property
    def release_minor(self) -> int | None:
        """The OpenShift 4 minor the installer installs, from the ClusterVersion channel it sets
        (`stable-4.19`); None where the channel names none (OKD's `stable-4`, `stable-scos-4`)."""
        for entry in self.bootstrap.get("storage", {}).get("files", []):
            if entry.get("path") == CVO_OVERRIDES_MANIFEST:
                document = yaml.safe_load(file_contents(entry) or b"{}") or {}
                match = re.fullmatch(r"[a-z-]+-4\.(\d+)", str((document.get("spec") or {}).get("channel", "")))
                return int(match.group(1)) if match else None
        return None

    def worker_pointer_from_cluster(self, bootstrap_enabled: bool) -> bool:
        """Whether a worker created now must get the pointer the running cluster serves instead of
        the installer's: once the bootstrap is gone (day 2) on a release whose MCO may have rotated
        the machine config server's CA (4.19+, or a release the configs do not name)."""
        minor = self.release_minor
        return not bootstrap_enabled and (minor is None or minor >= MCS_CA_ROTATION_MINOR)

    @property
    def bootstrap_manifests(self) -> list[str]:
        """The manifests the bootstrap applies, relative to /opt/openshift (`openshift/...`)."""
        paths = (entry.get("path", "") for entry in self.bootstrap.get("storage", {}).get("files", []))
        return sorted(
            path.removeprefix("/opt/openshift/")
            for path in paths
            if path.startswith(("/opt/openshift/manifests/", "/opt/openshift/openshift/"))
        )

    @classmethod
    def from_files(cls, files: Mapping[str, bytes]) -> InstallerAssets:
        missing = [name for name in ASSET_FILES if name not in files]
        if missing:
            raise ValueError(f"installer output lacks {', '.join(missing)}")
        record = release = None
        if RECORD_FILE in files:
            data = json.loads(files[RECORD_FILE])
            record = InstallRecord(float(data["generatedAt"]), int(data.get("generation", 1)), data.get("stack"))
        if RELEASE_FILE in files:
            release = json.loads(files[RELEASE_FILE])
        return cls(
            bootstrap=json.loads(files["bootstrap.ign"]),
            master=json.loads(files["master.ign"]),
            worker=json.loads(files["worker.ign"]),
            metadata=json.loads(files["metadata.json"]),
            kubeconfig=files["auth/kubeconfig"].decode(),
            kubeadmin_password=files["auth/kubeadmin-password"].decode().strip(),
            record=record,
            release_image=(release or {}).get("release") or None,
            release_images=dict((release or {}).get("images") or {}),
        )


def missing_asset_files(directory: str | Path) -> list[str]:
    directory = Path(directory)
    return [name for name in ASSET_FILES if not (directory / name).is_file()]


def bundle(files: Mapping[str, bytes]) -> str:
    """The line format the run script prints: `<path> <base64>` per file, extras last."""
    names = [*ASSET_FILES, *(name for name in (RECORD_FILE, RELEASE_FILE) if name in files)]
    return "".join(f"{name} {base64.b64encode(files[name]).decode()}\n" for name in names)


def unbundle(text: str) -> dict[str, bytes]:
    files = {}
    for line in text.splitlines():
        if line.strip():
            name, _, payload = line.partition(" ")
            files[name] = base64.b64decode(payload)
    return files


# --------------------------------------------------------------------------- do the configs fit the stack


def installed_settings(assets: InstallerAssets) -> dict[str, Any]:
    """What the configs themselves say about the stack they were made for, in stack-file
    keys: the install-config carried in the bootstrap config, and the infra ID's name."""
    document = assets.install_config
    settings: dict[str, Any] = {}
    name = (document.get("metadata") or {}).get("name") or assets.metadata.get("clusterName")
    if name:
        settings["clusterName"] = name
    if document.get("baseDomain"):
        settings["baseDomain"] = document["baseDomain"]
    networks = (document.get("networking") or {}).get("machineNetwork") or []
    if networks:
        settings["machineNetwork"] = str(IPv4Network(networks[0]["cidr"]))
    replicas = (document.get("controlPlane") or {}).get("replicas")
    if replicas is not None:
        settings["masters.count"] = int(replicas)
    if document.get("sshKey"):
        settings["sshKey"] = document["sshKey"].strip()
    if document.get("additionalTrustBundle"):
        settings["additionalTrustBundle"] = document["additionalTrustBundle"]
    platform = document.get("platform") or {}
    for key, field_name in (("apiVip", "apiVIPs"), ("ingressVip", "ingressVIPs")):
        for section in platform.values():
            if isinstance(section, dict) and section.get(field_name):
                settings[key] = str(section[field_name][0])
    return settings


def check_assets(config: ClusterConfig, api_vip: str, ingress_vip: str, assets: InstallerAssets) -> list[str]:
    """Configs made for another cluster (name, domain, machine network, VIPs, control plane
    size) would build nodes that never join this one: one problem per disagreement."""
    stack = {
        "clusterName": config.cluster_name,
        "baseDomain": config.base_domain,
        "machineNetwork": str(config.machine_network),
        "masters.count": config.masters.count,
        "apiVip": api_vip,
        "ingressVip": ingress_vip,
    }
    problems = []
    for key, value in installed_settings(assets).items():
        if key in stack and stack[key] != value:
            problems.append(
                f"ocp:{key}: the stack says {stack[key]} but the installer configs were made for {value}: "
                "point ocp:installer.assetsDir (or --assets) at the configs of this cluster, or regenerate them "
                "from this stack"
            )
    problems += _platform_problems(config, assets)
    return problems


def _platform_problems(config: ClusterConfig, assets: InstallerAssets) -> list[str]:
    """Configs for the other mode would bring the wrong VIP handling (two VRRP stacks, or none);
    integrated configs that still hold the installer's machines would make a second set of servers."""
    platforms = sorted((assets.install_config.get("platform") or {}).keys())
    wanted = "openstack" if config.integrated else "none"
    if platforms and platforms != [wanted]:
        key = "openstack.mode" if config.platform == "openstack" else "platform"
        return [
            f"ocp:{key}: the stack needs configs for platform: {wanted} but the installer configs were made for "
            f"platform: {platforms[0]}: make them with platform: {wanted}, or leave ocp:installer.assetsDir out so "
            "that the program runs the installer with this stack's install-config"
        ]
    if not config.integrated:
        return []
    left = [name for name in assets.bootstrap_manifests if any(fnmatch(name, p) for p in UPI_REMOVED_MANIFESTS)]
    if not left:
        return []
    return [
        f"ocp:installer.assetsDir: the configs still hold the installer's machines ({', '.join(left[:3])}"
        f"{', ...' if len(left) > 3 else ''}): the Machine API would make servers beside this program's. Delete "
        f"{', '.join(UPI_REMOVED_MANIFESTS)} after `openshift-install create manifests` and before `create ignition-configs`"
    ]

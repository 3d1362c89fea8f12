"""The contract with `openshift-install`: the run scripts. Pure Python.

- what the program gives it: `install-config.yaml` (cluster/install_config.py);
- what it leaves behind: `ASSET_FILES`, parsed into `InstallerAssets`, and whether a set of
  configs belongs to this stack, `check_assets` (cluster/installer_output.py);
- how those reach the program: the run script (`run_script`, here) prints every file as a
  `<path> <base64>` line (`bundle`), plus three lines of its own: the install record (when,
  which generation, the stack's settings at install time), the release payload's images, and
  32 random bytes, the root of the secrets derived for the cluster (cluster/identity.py).

The installer runs once per cluster (see components/installer.py): its output, kept in
Pulumi state, is what every later run builds nodes from and compares the stack against.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping
from fnmatch import fnmatch
from typing import Any

from cluster.cloud_provider_config import environment_value, merge_script
from cluster.config import ClusterConfig
from cluster.install_config import cloud_ca_bundle, install_config, mirrors_environment, render_install_config
from cluster.installer_directory import OWN_DIRECTORY_CHECK, REMAKE
from cluster.installer_output import (
    ASSET_FILES,
    CLUSTER_CONFIG_MANIFEST,
    DIR_MARKER,
    KEPT_BUNDLE,
    MAX_BOOTSTRAP_AGE_HOURS,
    MCS_CA_ROTATION_MINOR,
    POINTER_SECRETS,
    RECORD_FILE,
    RELEASE_COMPONENTS,
    RELEASE_FILE,
    ROOT_BYTES,
    ROOT_FILE,
    UPI_REMOVED_MANIFESTS,
    WORKER_POINTER_SECRET,
    InstallerAssets,
    InstallRecord,
    bundle,
    check_assets,
    installed_settings,
    missing_asset_files,
    unbundle,
)

# The contract's parts, importable from here as before.
__all__ = [
    "ASSET_FILES",
    "CLUSTER_CONFIG_MANIFEST",
    "DIR_MARKER",
    "KEPT_BUNDLE",
    "MAX_BOOTSTRAP_AGE_HOURS",
    "MCS_CA_ROTATION_MINOR",
    "RECORD_FILE",
    "RELEASE_COMPONENTS",
    "RELEASE_FILE",
    "ROOT_FILE",
    "UPI_REMOVED_MANIFESTS",
    "POINTER_SECRETS",
    "WORKER_POINTER_SECRET",
    "InstallRecord",
    "InstallerAssets",
    "bundle",
    "check_assets",
    "cloud_ca_bundle",
    "install_config",
    "installed_settings",
    "missing_asset_files",
    "render_install_config",
    "unbundle",
]


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
marker="$dir/{DIR_MARKER}"
# The marker names the stack whose installer files these are, fully qualified (organization/project/stack):
# two projects or backends may each have a stack `dev`.
owner_id=${{STACK_ID:-$STACK}}
{OWN_DIRECTORY_CHECK}
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  if [ ! -e "$marker" ]; then
    echo "ocp:installer.dir: $dir exists and was not made by this program (no {DIR_MARKER}): refusing to delete it; name a new directory" >&2
    exit 3
  fi
  # One line; an empty one is from before it named a stack, a bare name from before it named the project.
  owner=$(head -n 1 "$marker")
  if [ -n "$owner" ] && [ "$owner" = "$STACK" ] && [ "$owner" != "$owner_id" ]; then
    printf '%s\n' "$owner_id" > "$marker"
    echo "ocp:installer.dir: $dir was marked with the bare stack name $STACK before markers named the project: stack $owner_id takes it over" >&2
    owner=$owner_id
  fi
  if [ -n "$owner" ] && [ "$owner" != "$owner_id" ]; then
    echo "ocp:installer.dir: $dir holds the installer files of stack $owner (auth/, metadata.json, its installer state), and this is stack $owner_id: refusing to empty it. Give stack $STACK a directory of its own: \`pulumi config set --path ocp:installer.dir assets/$STACK --stack $STACK\`, or remove ocp:installer.dir from its stack file (the default is assets/<stack>)" >&2
    exit 3
  fi
  if [ -z "$owner" ] && [ -e "$dir/metadata.json" ]; then
    echo "ocp:installer.dir: $dir holds the installer files of a cluster (metadata.json, auth/) made before this program wrote the stack's name into {DIR_MARKER}, so which stack they belong to is unknown: refusing to empty it. If they are stack $STACK's own: \`echo $owner_id > $marker\` and run again; if another stack's, give stack $STACK a directory of its own (\`pulumi config set --path ocp:installer.dir assets/$STACK --stack $STACK\`)" >&2
    exit 3
  fi
  if [ -z "$owner" ]; then
    echo "ocp:installer.dir: $dir was made by this program before its marker named a stack, and holds no cluster's files: stack $owner_id takes it over" >&2
  fi
fi
if [ "${{FIPS:-false}}" = true ] && [ -z "${{OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION:-}}" ]; then
  {FIPS_CHECK}
fi
{REMAKE}
printf '%s' "$INSTALL_CONFIG" > "$dir/install-config.yaml"
if [ -n "${{CLOUD_CA_BUNDLE:-}}" ]; then
  printf '%s' "$CLOUD_CA_BUNDLE" > "$dir/.cloud-ca.pem" && export OS_CACERT="$dir/.cloud-ca.pem"
fi
if [ "$PLATFORM" = openstack ] || [ -n "${{EXTRA_MANIFESTS:-}}" ]; then
  "$OPENSHIFT_INSTALL" create manifests --dir "$dir" >&2
  if [ "$PLATFORM" = openstack ]; then rm -f -- {removed}; fi
  # The stack's own (ocp:ntpServers, ocp:installer.extraManifests): one "name base64" per line, manifests/<name> to manifests/.
  printf '%s\n' "${{EXTRA_MANIFESTS:-}}" | while read -r name data; do
    if [ -z "$name" ]; then continue; fi
    case "$name" in manifests/*) target="$dir/$name";; *) target="$dir/openshift/$name";; esac
    if [ -e "$target" ]; then
      echo "ocp:installer.extraManifests: $name would replace the installer's own ${{target#"$dir"/}}: rename it" >&2
      exit 3
    fi
    printf '%s' "$data" | base64 -d > "$target"
  done
{merge_script()}fi
"$OPENSHIFT_INSTALL" create ignition-configs --dir "$dir" >&2
generated_at=$(date -u +%s)
release=$("$OPENSHIFT_INSTALL" version | sed -n 's/^release image //p')
images=""
if [ -n "$RELEASE_COMPONENTS" ]; then
  # Gone however this ends: a failing oc stops the script (set -e) with the secret still written.
  trap 'rm -f "$dir/.pull-secret.json"' EXIT
  printf '%s' "$PULL_SECRET" > "$dir/.pull-secret.json"
  mirrors=""; [ -z "${{IMAGE_DIGEST_MIRRORS:-}}" ] || {{ printf '%s' "$IMAGE_DIGEST_MIRRORS" > "$dir/.image-digest-mirror-set.json"; mirrors="--idms-file=$dir/.image-digest-mirror-set.json"; }}
  for name in $RELEASE_COMPONENTS; do
    image=$("$OC" adm release info --registry-config="$dir/.pull-secret.json" ${{mirrors:+"$mirrors"}} --image-for="$name" "$release")
    images="$images${{images:+,}}\\"$name\\":\\"$image\\""
  done
  rm -f "$dir/.pull-secret.json"
fi
{{
  for f in {files}; do printf '%s ' "$f"; base64 -w0 "$dir/$f"; echo; done
  printf '{RECORD_FILE} '
  printf '{{"generatedAt":%s,"generation":%s,"stack":%s,"masterPointers":true}}' "$generated_at" "$GENERATION" "$INSTALL_FACTS" | base64 -w0; echo
  printf '{RELEASE_FILE} '
  printf '{{"release":"%s","images":{{%s}}}}' "$release" "$images" | base64 -w0; echo
  printf '{ROOT_FILE} '
  head -c {ROOT_BYTES} /dev/urandom | base64 -w0; echo
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
if [ -z "$(tr -d '[:space:]' < "$dir/auth/kubeadmin-password")" ]; then
  echo "ocp:installer.assetsDir: $dir/auth/kubeadmin-password is empty: the cluster would have no admin login. Point it at the --dir of \`openshift-install create ignition-configs\`, which writes one" >&2
  exit 3
fi
for f in {files}; do printf '%s ' "$f"; base64 -w0 "$dir/$f"; echo; done
printf '{RECORD_FILE} '
printf '{{"generatedAt":%s,"generation":%s,"stack":%s,"masterPointers":true}}' "$(stat -c %Y "$dir/bootstrap.ign")" "$GENERATION" "$INSTALL_FACTS" | base64 -w0; echo
if [ -f "$dir/{RELEASE_FILE}" ]; then printf '{RELEASE_FILE} '; base64 -w0 "$dir/{RELEASE_FILE}"; echo; fi
printf '{ROOT_FILE} '
head -c {ROOT_BYTES} /dev/urandom | base64 -w0; echo
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
    stack_id: str | None = None,
) -> dict[str, str]:
    """The script's environment (`run_script`, or `read_script` for installer.assetsDir);
    every value stays far below Linux's 128 KiB per string. `stack_id`: the stack fully
    qualified (organization/project/stack), what the directory's marker holds."""
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
        "STACK": stack,
        "STACK_ID": stack_id or stack,  # written into the directory's marker: another stack never empties it
        "INSTALL_CONFIG": install_config_text,
        "PULL_SECRET": pull_secret,
        "PLATFORM": "openstack" if config.integrated else "none",
        "RELEASE_COMPONENTS": " ".join(release_lookups(config)), **mirrors_environment(config),
        **common,
    }
    if config.fips:
        environment["FIPS"] = "true"
    if manifests:  # between `create manifests` and `create ignition-configs`
        environment["EXTRA_MANIFESTS"] = "\n".join(
            f"{name} {base64.b64encode(data).decode()}" for name, data in sorted(manifests.items())
        )
    if installer.cloud_provider_config is not None:  # merged into the installer's manifests/cloud-provider-config.yaml
        environment["CLOUD_PROVIDER_CONFIG"] = environment_value(installer.cloud_provider_config)
    if config.integrated:
        assert config.openstack is not None
        environment["OS_CLOUD"] = config.openstack.cloud  # the installer validates against the cloud
        if config.openstack.ca_bundle is not None:
            environment["CLOUD_CA_BUNDLE"] = config.openstack.ca_bundle
    return environment


# What a refusal tells the user to leave as it was, by role: a new worker comes from workers.count,
# a master made after install from a server made again (tools.recover, a server lost from the state).
_POINTER_EDIT = {"master": ("ocp:masters", "the master's server as it was"), "worker": ("ocp:workers.count", "ocp:workers.count as it was")}


def pointer_script(role: str = "worker") -> str:
    """A master's or worker's pointer config on stdout, run once, when its server is made: the
    installer's (POINTER_SOURCE=install), or the one the running cluster serves, read through its
    API with the stack's kubeconfig. No server without it: a failure names what to do."""
    namespace, name, key = POINTER_SECRETS[role]
    edited, leave = _POINTER_EDIT[role]
    return f"""set -eu
if [ "$POINTER_SOURCE" = install ]; then printf '%s' "$INSTALL_POINTER"; exit 0; fi
umask 077
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '%s' "$KUBECONFIG_DATA" > "$scratch/kubeconfig"
refuse() {{
  if [ "${{LENIENT:-}}" = 1 ]; then
    echo "warning: {edited}: $SERVER keeps the installer's pointer: the secret {namespace}/{name} could not be read ($1). A running {role} does not read it again; before a {role} is made again, make the API ($API_URL) reachable and run \\`pulumi up --replace\\` with this command's URN" >&2
    printf '%s' "$INSTALL_POINTER"
    exit 0
  fi
  echo "{edited}: $SERVER cannot be created: on OpenShift 4.{MCS_CA_ROTATION_MINOR} and later (a cluster upgraded to it too) the machine config operator may have rotated the CA of its config server (once any MachineSet exists), so a new {role} boots from the pointer config in secret {namespace}/{name}, and $1. Make the API ($API_URL) reachable from where \\`pulumi up\\` runs (ocp:openstack.apiFloatingIp, the etcHosts output) and ocp:installer.oc a working oc or kubectl, or leave {leave}" >&2
  exit 3
}}
if ! encoded=$("$OC" --kubeconfig="$scratch/kubeconfig" --request-timeout=30s get secret {name} -n {namespace} -o 'jsonpath={{.data.{key}}}' 2>"$scratch/error"); then
  # kubectl and oc log discovery retries (klog lines: E1125 08:55:35...) before their error.
  detail=$(sed '/^[IWEF][0-9][0-9][0-9][0-9] /d' "$scratch/error" | paste -sd ' ' - | cut -c1-400)
  refuse "reading it through the cluster's API failed: ${{detail:-$(tail -n 1 "$scratch/error" | cut -c1-400)}}"
fi
pointer=$(printf '%s' "$encoded" | base64 -d 2>/dev/null) || refuse "its {key} is not base64"
case "$pointer" in '{{'*'"ignition"'*) ;; *) refuse "its {key} is not an Ignition config";; esac
printf '%s' "$pointer"
"""


def pointer_environment(
    config: ClusterConfig, assets: InstallerAssets, server: str, from_cluster: bool, role: str = "worker", strict: bool = True
) -> dict[str, str]:
    """The environment of `pointer_script` for one master or worker (a secret: the kubeconfig).
    Not `strict`: where the cluster's pointer cannot be read, the installer's, with a warning."""
    installed = json.dumps(assets.master if role == "master" else assets.worker, sort_keys=True, separators=(",", ":"))
    if not from_cluster:
        return {"POINTER_SOURCE": "install", "INSTALL_POINTER": installed}
    return {
        "POINTER_SOURCE": "cluster",
        "KUBECONFIG_DATA": assets.kubeconfig,
        "OC": config.installer.oc,
        "SERVER": server,
        "API_URL": assets.api_url,
        **({} if strict else {"LENIENT": "1", "INSTALL_POINTER": installed}),
    }


def release_lookups(config: ClusterConfig) -> tuple[str, ...]:
    """The payload images the program reads with `oc adm release info` (through ocp:imageDigestSources' mirrors): the
    on-node networking's (standalone, libvirt) but those ocp:networking.images names; UserManaged: CoreDNS alone."""
    if config.integrated:  # the MCO brings them itself
        return ()
    needed = ("coredns",) if config.user_managed_lb else RELEASE_COMPONENTS
    return tuple(name for name in needed if name not in config.networking.images)


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
mirrors=""; [ -z "${IMAGE_DIGEST_MIRRORS:-}" ] || { printf '%s' "$IMAGE_DIGEST_MIRRORS" > "$scratch/idms.json"; mirrors="--idms-file=$scratch/idms.json"; }
refuse() {
  echo "ocp:workers.count: no static pod images for $SERVER (a stack made before these lookups reads them once for each running worker, which does not change): a worker made after install runs the keepalived, haproxy and CoreDNS images of the release the cluster runs now (the install's may miss every fix since, or be gone from a pruned mirror), and $1. Make the API ($API_URL) reachable from where \`pulumi up\` runs and ocp:installer.oc a working oc, name the running release's images in ocp:networking.images, or leave ocp:workers.count as it was" >&2
  exit 3
}
release=$("$OC" --kubeconfig="$scratch/kubeconfig" --request-timeout=30s get clusterversion version -o 'jsonpath={.status.desired.image}' 2>"$scratch/error") \
  || refuse "reading the cluster's release through its API failed: $(tr '\n' ' ' < "$scratch/error" | cut -c1-400)"
[ -n "$release" ] || refuse "the cluster's ClusterVersion names no desired release image"
images=""
for name in $COMPONENTS; do
  image=$("$OC" adm release info --registry-config="$scratch/pull-secret.json" ${mirrors:+"$mirrors"} --image-for="$name" "$release" 2>"$scratch/error") \
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
    return {
        "IMAGES_SOURCE": "cluster",
        "KUBECONFIG_DATA": assets.kubeconfig,
        "PULL_SECRET": config.pull_secret.get_secret_value(),
        "OC": config.installer.oc,
        "COMPONENTS": " ".join(release_lookups(config)),
        "SERVER": server,
        "API_URL": assets.api_url, **mirrors_environment(config),
    }


def upi_manifests(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """What the run script leaves of `create manifests` in integrated mode (for the mocks)."""
    return {name: data for name, data in files.items() if not any(fnmatch(name, p) for p in UPI_REMOVED_MANIFESTS)}


def installer_dir(config: ClusterConfig, stack: str) -> str:
    return config.installer.dir or f"assets/{stack}"


# The bootstrap's full config, written from the command's stdin for the Glance image to upload, into
# the installer's directory, which holds bootstrap.ign with the same secrets already; private to the
# user, as that directory is. Removed with the bootstrap.
CONFIG_FILE = "bootstrap-glance.ign"
WRITE_FILE = 'umask 077 && mkdir -p "$(dirname "$FILE")" && part=$(mktemp "$FILE.XXXXXX") && cat > "$part" && mv -f "$part" "$FILE"'
REMOVE_FILE = 'rm -f "$FILE"'

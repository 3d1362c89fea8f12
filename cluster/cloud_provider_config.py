"""ocp:installer.cloudProviderConfig: the user's settings for OpenStack's cloud provider, merged into the
installer's `manifests/cloud-provider-config.yaml` (ConfigMap openshift-config/cloud-provider-config, key
`config`) between `create manifests` and `create ignition-configs`. Pure Python.

The settings that must be right before the cluster runs live there: `[BlockStorage] ignore-volume-az`
where Cinder's zones are not Nova's (the Cinder CSI driver reads that section), `[LoadBalancer]
lb-provider` and the like (the cloud controller manager). Both read the INI with gcfg (gopkg.in/gcfg.v1,
cloud-provider-openstack v1.32 for OpenShift 4.19), wrapped in gcfg.FatalOnly: a bad value or line stops
them, while an unknown section or key is dropped without a word. So every line is checked here before
anything runs: only the sections and keys those two read (the struct tags of pkg/openstack/openstack.go,
pkg/util/metadata and pkg/csi/cinder/openstack/openstack.go), values as gcfg parses them for the field's
type. `[Global]` is refused: the installer writes it from the cloud's credentials (secret
kube-system/openstack-credentials) and OpenShift's cloud controller manager operator rewrites it. The
written form is a strict subset of what gcfg reads: `key = value`, a value unquoted or in double quotes
without escapes, so that go-ini reads it the same. That operator reads the whole ConfigMap with go-ini
first (gopkg.in/ini.v1 v1.67.1, `ini.Load` with its defaults in CloudConfigTransformer,
openshift/cluster-cloud-controller-manager-operator pkg/cloud/openstack/openstack.go) and writes it
back for the cloud controller manager; its parser (parser.go, readKeyName and readValue) reads a value
opening with a backtick or three double quotes as a raw string running on to the next one, over lines, a trailing
backslash as a continuation, `;` or `#` as a comment even inside double quotes, strips single quotes
around a value, fails on a key without `=` (the whole config then), and keeps only the last of a key
set twice. So backticks, backslashes, `;`/`#` inside quotes, single-quoted values, a bare key and a key
set twice are refused here, each with what to write instead; so are tabs (the run script's merge
splits each setting at its first one) and control characters (the manifest holds these lines as YAML,
which takes none).
"""

from __future__ import annotations

import re

from cluster.printable import shown

KEY = "ocp:installer.cloudProviderConfig"
BOOL, INT, UINT, DURATION, TEXT, LIST = "bool", "int", "uint", "duration", "text", "list"
_LB = {
    "enabled": BOOL, "lb-version": TEXT, "subnet-id": TEXT, "member-subnet-id": TEXT, "network-id": TEXT,
    "floating-network-id": TEXT, "floating-subnet-id": TEXT, "floating-subnet": TEXT, "floating-subnet-tags": TEXT,
    "lb-method": TEXT, "lb-provider": TEXT, "create-monitor": BOOL, "monitor-delay": DURATION, "monitor-timeout": DURATION,
    "monitor-max-retries": UINT, "monitor-max-retries-down": UINT, "manage-security-groups": BOOL, "internal-lb": BOOL,
    "node-selector": TEXT, "cascade-delete": BOOL, "flavor-id": TEXT, "availability-zone": TEXT,
    "enable-ingress-hostname": BOOL, "ingress-hostname-suffix": TEXT, "max-shared-lb": INT, "container-store": TEXT,
    "provider-requires-serial-api-calls": BOOL, "default-tls-container-ref": TEXT,
}
_LB_CLASS = {name: TEXT for name in ("floating-network-id", "floating-subnet-id", "floating-subnet", "floating-subnet-tags", "network-id", "subnet-id", "member-subnet-id")}
SECTIONS: dict[str, dict[str, str]] = {
    "LoadBalancer": _LB,
    "LoadBalancerClass": _LB_CLASS,  # only as [LoadBalancerClass "name"]
    "Networking": {"ipv6-support-disabled": BOOL, "public-network-name": LIST, "internal-network-name": LIST, "address-sort-order": TEXT},
    "Route": {"router-id": TEXT},
    "Metadata": {"search-order": TEXT, "request-timeout": DURATION},
    "BlockStorage": {"node-volume-attach-limit": INT, "rescan-on-resize": BOOL, "ignore-volume-az": BOOL, "ignore-volume-microversion": BOOL},
}
_BOOLS = {"true", "yes", "on", "1", "false", "no", "off", "0"}
_NAME = r"[A-Za-z][A-Za-z0-9-]*"
_HEADER = re.compile(rf'\[[ \t]*({_NAME})(?:[ \t]+"([^"\\\n]+)")?[ \t]*\][ \t]*(?:[#;].*)?')
# gcfg ends an unquoted value at `;` or `#` (a comment), and trims it.
_SETTING = re.compile(rf'({_NAME})[ \t]*(?:=[ \t]*("[^"]*"|[^"#;]*?)[ \t]*)?(?:[#;].*)?')
# time.ParseDuration: a decimal number and a unit, one or more times (`0` alone too).
_DURATION = re.compile(r"[+-]?(?:0|(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|ms|s|m|h))+)")
_INTEGER = re.compile(r"[+-]?(?:[0-9]+|0[xX][0-9a-fA-F]+)")
# How go-ini (OpenShift's operator) reads these, unlike gcfg (the module's docstring).
GO_INI = "OpenShift's cloud controller manager operator (its INI reader, gopkg.in/ini.v1)"


def _character_problem(line: str) -> str | None:
    """Why a line cannot be passed on whatever it says: a tab, a backtick, a control character (None: it can)."""
    if "\t" in line:
        return "holds a tab: write spaces instead"
    if "`" in line:
        return f"holds a backtick (`), which {GO_INI} reads as the start of a raw string that runs on to the next backtick, over lines: leave it out"
    unprintable = sorted({c for c in line if not c.isprintable()})
    if unprintable:
        return f"holds {', '.join(shown(c) for c in unprintable)}, not printable (a control character breaks the installer's manifest, which is YAML): remove it"
    return None


def _value_problem(kind: str, value: str | None, name: str = "key") -> str | None:
    """Why gcfg would not take this value for a field of this kind (None: it would)."""
    if value is None:  # a name alone: gcfg sets a bool true (and refuses it for anything else); go-ini fails the whole file
        return f"has no value, which {GO_INI} refuses, reading none of the config: write `{name} = true`" if kind == BOOL else "has no value (`key = value`)"
    if "\\" in value:
        return "holds a backslash, which this program does not pass on: write the value without it"
    if value.startswith('"') and any(c in value for c in "#;"):
        return f"holds {' and '.join(c for c in '#;' if c in value)} inside its quotes, where {GO_INI} ends the value (a comment): leave it out"
    if len(value) > 1 and value[0] == value[-1] == "'":
        return f"is in single quotes, which {GO_INI} strips and the cloud provider keeps: write it without them"
    text = value[1:-1] if value.startswith('"') else value
    if kind == BOOL and text.lower() not in _BOOLS:
        return f"is {value!r}, not a boolean: write true or false (yes/no, on/off, 1/0)"
    if kind in (INT, UINT) and not _INTEGER.fullmatch(text):
        return f"is {value!r}, not a whole number"
    if kind == UINT and text.startswith("-"):
        return f"is {value!r}: it cannot be negative"
    if kind == DURATION and not _DURATION.fullmatch(text):
        return f"is {value!r}, not a duration: write it as Go does, e.g. 5s, 1m30s"
    return None


def parse(text: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The settings (section header as written back, key, `key = value` line) and one problem per bad line,
    each naming the key and the line."""
    settings: list[tuple[str, str, str]] = []
    problems: list[str] = []
    header: str | None = None
    section: dict[str, str] = {}
    given: set[tuple[str, str]] = set()
    # Lines as the run script's merge and YAML see them: `\n` alone ends one (str.splitlines would end one at \f or \x85 too).
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(" ")
        where = f"{KEY}: line {number}"
        character = _character_problem(raw)
        if character:
            problems.append(f"{where} {character}")
            header = "" if line.startswith("[") else header  # a refused header: its keys are not told again
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            found = _HEADER.fullmatch(line)
            name, sub = (found[1], found[2]) if found else (None, None)
            header = ""  # a refused section: its keys are not told again
            if name is None:
                problems.append(f'{where}: {line!r} is no section header: write [Section] or [LoadBalancerClass "name"]')
            elif name == "Global":
                problems.append(f"{where}: [Global] is the installer's (the cloud's credentials, from secret kube-system/openstack-credentials), and OpenShift rewrites it: leave it out")
            elif name not in SECTIONS:
                known = ", ".join(f"[{s}]" for s in SECTIONS)
                problems.append(f"{where}: [{name}] is no section the cloud provider or the Cinder CSI driver reads (they would drop it without a word): use one of {known}, spelt so")
            elif (name == "LoadBalancerClass") != (sub is not None):
                problems.append(f'{where}: {line!r}: write [LoadBalancerClass "<class name>"], and no other section with a name in quotes')
            else:
                header, section = (f'[{name} "{sub}"]' if sub else f"[{name}]"), SECTIONS[name]
            continue
        found = _SETTING.fullmatch(line)
        if found is None:
            problems.append(
                f"{where}: {line!r} is neither `key = value`, a [Section] nor a comment (a value is written plain, or whole in "
                "double quotes without backslashes; `;` and `#` start a comment)"
            )
            continue
        name, value = found[1], found[2]
        if not header:
            if header is None:
                problems.append(f"{where}: {name} comes before any section header: put it under its [Section]")
            continue
        kind = section.get(name)
        if kind is None:
            problems.append(f"{where}: {name} is no key of {header} (the cloud provider would drop it without a word): check its spelling against cloud-provider-openstack's documentation")
            continue
        if (header, name) in given:
            kept = f" ({GO_INI} keeps only the last)" if kind == LIST else ""
            problems.append(f"{where}: {name} is set twice in {header}{kept}: keep one")
            continue
        given.add((header, name))
        problem = _value_problem(kind, value, name)
        if problem:
            problems.append(f"{where}: {header} {name} {problem}")
            continue
        settings.append((header, name, f"{name} = {value}" if value is not None else name))
    return settings, problems


def problems(text: str | None, integrated: bool) -> list[str]:
    """Everything wrong with the key, before any resource."""
    if text is None:
        return []
    if not integrated:
        return [f"{KEY}: only an integrated stack (ocp:platform openstack, ocp:mode integrated) has OpenStack's cloud provider: remove the key"]
    settings, found = parse(text)
    if not settings and not found:
        return [f"{KEY}: holds no setting: write the INI lines to add, e.g. \"[BlockStorage]\\nignore-volume-az = yes\", or remove the key"]
    return found


def environment_value(text: str) -> str:
    """What the run script merges: one `<section header>\\t<key = value>` line per setting."""
    return "\n".join(f"{header}\t{line}" for header, _, line in parse(text)[0])


# The run script's merge: in the installer's ConfigMap, the block scalar `config: |` (as Go's yaml writes an
# INI that ends in a newline), each of the user's keys replacing the installer's of the same section and name
# or added at the end of its section, new sections added after the last. Anything else is refused.
MERGE_AWK = r"""
function emit(text,   n, i, parts) { n = split(text, parts, "\n"); for (i = 1; i < n; i++) print (parts[i] == "" ? "" : pad parts[i]) }
function close_section() { if (current in add && !(current in done)) { emit(add[current]); done[current] = 1 } }
BEGIN {
  pad = "    "
  n = split(ENVIRON["CLOUD_PROVIDER_CONFIG"], given, "\n")
  for (i = 1; i <= n; i++) {
    tab = index(given[i], "\t"); if (!tab) continue
    h = substr(given[i], 1, tab - 1); line = substr(given[i], tab + 1); k = line; sub(/[ \t]*=.*/, "", k)
    if (!(h in add)) order[++sections] = h
    add[h] = add[h] line "\n"; set[h, k] = 1
  }
}
state == 0 && /^  config: [|]$/ { print; state = 1; found++; next }
state == 1 && $0 != "" && !/^    / { close_section(); for (i = 1; i <= sections; i++) if (!(order[i] in done)) { print ""; print pad order[i]; emit(add[order[i]]) } ; state = 2 }
state == 1 {
  if ($0 == "") { blanks++; next }
  line = substr($0, 5)
  if (line ~ /^\[/) { close_section(); current = line; sub(/[ \t]+$/, "", current) }
  else { k = line; sub(/[ \t]*=.*/, "", k); if ((current, k) in set) next }
  for (; blanks > 0; blanks--) print ""
  print; next
}
{ print }
END {
  if (state == 1) { close_section(); for (i = 1; i <= sections; i++) if (!(order[i] in done)) { print ""; print pad order[i]; emit(add[order[i]]) } }
  if (found != 1) exit 3
}
"""


def merge_script() -> str:
    """The run script's lines, after `create manifests`: the user's settings into the installer's file."""
    return f"""if [ -n "${{CLOUD_PROVIDER_CONFIG:-}}" ]; then
  f="$dir/manifests/cloud-provider-config.yaml"
  if ! awk '{MERGE_AWK}' "$f" > "$f.merged"; then
    echo "{KEY}: the installer's manifests/cloud-provider-config.yaml holds no config block this program can merge into (an installer of another shape?): set the cloud provider's settings after install instead (docs/day2.md)" >&2
    exit 3
  fi
  mv "$f.merged" "$f"
fi
"""

"""Builds the real toolchain from Go modules and lays it out in the checkout as .toolchain/.

    python3 toolchain/build.py            # what `bash .ci/toolchain` runs
    python3 toolchain/build.py etcd ...   # builds only these; the others are laid out if built before

Everything comes from toolchain/pins.toml. Each binary is built from a small module of our
own (toolchain/modules/<name>: go.mod, go.sum, and tools.go naming the upstream main package,
or main.go, a main of our own, for a plugin whose upstream main cannot be had), which this
script rewrites when the pins moved (that needs the module proxy; commit the result). Each
provider plugin built is installed into .toolchain/pulumi-home at the version its SDK asks for. Builds go into a cache
outside the clone, one directory per component keyed by everything that shapes the binary,
so a second checkout on the same machine only lays out .toolchain/ (seconds). Pinned
modules the proxy refuses are reported as missing, with the proxy's answer; they fail
nothing here, and the tests that need them say so when they skip.

npm packages pinned there (`[npm.<name>]`: gitlab-ci-local) are installed from the npm registry into
the same cache, checked against their pinned integrity, and laid out in .toolchain/bin as wrappers.

Standard library only: it runs before the virtualenv exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "toolchain" / "pins.toml"
MODULES = ROOT / "toolchain" / "modules"
LAYOUT = ROOT / ".toolchain"
HOW = "run `bash .ci/toolchain`"
# Bumped when the way a binary is built changes, so cached builds are not taken for new ones.
RECIPE = "1"


@dataclass(frozen=True)
class Component:
    name: str
    module: str
    version: str
    binary: str | None = None  # None: a provider plugin with no build recipe yet
    package: str = ""
    require: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()
    data: str | None = None
    nosumdb: tuple[str, ...] = ()
    plugin: str | None = None
    plugin_version: str | None = None
    wanted: str | None = None
    own_main: bool = False  # main.go of ours in the module directory instead of an upstream main package
    replace: tuple[str, ...] = ()  # `old => new version` lines to repeat, beyond the upstream module's own
    # `go mod tidy -e`: the bridge's code generators import modules the proxy refuses; no plugin reaches them.
    tidy_e: bool = False
    # More main packages of the module, built beside `package` in one `go build`, each binary named
    # after its package's last element (as `binary` must then be).
    packages: tuple[str, ...] = ()
    # The version at which to repeat the upstream module's replaces by local paths (k8s.io/kubernetes
    # replaces its staging modules, k8s.io/api and the others, by ./staging/...): each is
    # required and replaced at it, since the upstream module requires them at v0.0.0.
    staging: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def fill(self, text: str) -> str:
        return text.format(module=self.module, version=self.version, plugin_version=self.plugin_version, **self.extra)

    @property
    def buildable(self) -> bool:
        return self.binary is not None

    @property
    def module_dir(self) -> Path:
        return MODULES / self.name


def load_pins(path: Path = PINS) -> list[Component]:
    known = set(Component.__dataclass_fields__) - {"name", "extra"}
    components = []
    for name, entry in tomllib.loads(path.read_text()).items():
        if name == "npm":
            continue  # load_npm_pins
        fields = {key: tuple(value) if isinstance(value, list) else value for key, value in entry.items() if key in known}
        extra = {key: value for key, value in entry.items() if key not in known}
        components.append(Component(name=name, extra=extra, **fields))
    return components


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    wanted: str | None = None


NPM = ROOT / "toolchain" / "npm"  # package.json and package-lock.json: every npm package, exactly


def load_npm_pins(path: Path = PINS) -> list[NpmPackage]:
    packages = tomllib.loads(path.read_text()).get("npm", {})
    return [NpmPackage(name=name, **entry) for name, entry in packages.items()]


# --------------------------------------------------------------------------- go


class BuildError(Exception):
    pass


def go_env(component: Component | None = None, *, readonly: bool = True) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOTOOLCHAIN="local",  # never fetch another Go as a module
        CGO_ENABLED="0",
        GOFLAGS=f"-mod={'readonly' if readonly else 'mod'} -buildvcs=false",
    )
    if component is not None and component.nosumdb:
        env["GONOSUMDB"] = ",".join(component.nosumdb)
    return env


def go(args: list[str], cwd: Path, env: dict[str, str], quiet: bool = False) -> str:
    """Runs go; unless quiet, its progress (module downloads) and errors reach the terminal as they come."""
    result = subprocess.run(["go", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE if quiet else None, text=True)
    if result.returncode != 0:
        detail = result.stderr.strip()[-2000:] if quiet else "its errors are above"
        raise BuildError(f"go {' '.join(args[:2])} in {cwd}: {detail}")
    return result.stdout


def go_version() -> str:
    return subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()


def module_source(component: Component, env: dict[str, str]) -> Path:
    """The module's directory in GOMODCACHE (downloaded if need be, checked against go.sum)."""
    out = go(["mod", "download", "-json", f"{component.module}@{component.version}"], component.module_dir, env, quiet=True)
    return Path(json.loads(out)["Dir"])


def refusal(component: Component) -> str | None:
    """None when the proxy serves the pinned module; else its answer, in one line."""
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "go.mod").write_text("module example.com/probe\n")
        result = subprocess.run(
            ["go", "mod", "download", "-json", f"{component.module}@{component.version}"],
            cwd=scratch,
            env=go_env(component, readonly=False),
            capture_output=True,
            text=True,
        )
    if result.returncode == 0:
        return None
    try:
        message = json.loads(result.stdout).get("Error", "")
    except ValueError:
        message = result.stderr
    return " ".join(message.split())[-300:] or "go mod download failed"


# --------------------------------------------------------------------------- our module per binary


def wanted_go_mod(component: Component, upstream_go_mod: str | None) -> str:
    """go.mod of our module: the pinned requirement(s), and the upstream module's replaces of
    other modules (Go ignores replaces of dependencies, so they must be repeated)."""
    lines = [f"module example.com/ocp-toolchain/{component.name}", "", "go 1.23", "", "require ("]
    lines += [f"\t{component.module} {component.version}"]
    lines += [f"\t{path} {component.fill(version)}" for path, version in sorted(component.require.items())]
    staged = local_replaces(upstream_go_mod or "") if component.staging else []
    lines += [f"\t{path} {component.staging}" for path in staged]
    lines += [")"]
    replaces = [*component.replace, *(line for line in upstream_replaces(upstream_go_mod or "") if line not in component.replace)]
    replaces += [f"{path} => {path} {component.staging}" for path in staged]
    if replaces:
        lines += ["", "replace (", *[f"\t{line}" for line in replaces], ")"]
    return "\n".join(lines) + "\n"


def upstream_replaces(go_mod: str, local: bool = False) -> list[str]:
    """`old [v] => new v` lines of a go.mod, leaving out replaces by local paths (only those when local)."""
    found = []
    block = False
    for raw in go_mod.splitlines():
        line = raw.split("//")[0].strip()
        if line.startswith("replace ("):
            block = True
            continue
        if block and line == ")":
            block = False
            continue
        if line.startswith("replace "):
            line = line.removeprefix("replace ").strip()
        elif not block:
            continue
        if "=>" not in line:
            continue
        target = line.split("=>", 1)[1].strip()
        if target.startswith((".", "/")) != local:
            continue
        found.append(re.sub(r"\s+", " ", line))
    return found


def local_replaces(go_mod: str) -> list[str]:
    """The modules a go.mod requires and replaces by local paths, sorted (k8s.io/kubernetes' staging
    modules; those it replaces without requiring, sample-cli-plugin and the like, are left out)."""
    replaced = {line.split("=>")[0].split()[0] for line in upstream_replaces(go_mod, local=True)}
    return sorted(path for path in replaced if pinned_requirement(go_mod, path) not in (None, "=>"))


def main_packages(component: Component) -> list[str]:
    return [f"{component.module}/{package}" for package in (component.package, *component.packages)]


def tools_go(component: Component) -> str:
    if not component.packages:
        return (
            "//go:build tools\n\n// Names the binary this module builds, so `go mod tidy` keeps its dependencies.\n"
            f'package tools\n\nimport _ "{component.module}/{component.package}"\n'
        )
    imports = "".join(f'\t_ "{package}"\n' for package in main_packages(component))
    return (
        "//go:build tools\n\n// Names the binaries this module builds, so `go mod tidy` keeps their dependencies.\n"
        f"package tools\n\nimport (\n{imports})\n"
    )


def pinned_requirement(go_mod: str, module: str) -> str | None:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (\S+)", go_mod, re.MULTILINE)
    return match.group(1) if match else None


def module_files(component: Component) -> tuple[str, ...]:
    return ("go.mod", "go.sum", "main.go" if component.own_main else "tools.go")


def source_files(component: Component) -> tuple[str, ...]:
    """Every file of the module directory: the three every module has first (so a module with only
    those keeps the cache key it had), then any others (more Go sources of a main of ours)."""
    standard = module_files(component)
    others = sorted(str(path.relative_to(component.module_dir)) for path in component.module_dir.rglob("*") if path.is_file())
    return standard + tuple(name for name in others if name not in standard)


def module_is_current(component: Component) -> bool:
    directory = component.module_dir
    go_mod = directory / "go.mod"
    if not all((directory / name).is_file() for name in module_files(component)):
        return False
    text = go_mod.read_text()
    pins = {component.module: component.version, **{p: component.fill(v) for p, v in component.require.items()}}
    replaced = upstream_replaces(text)
    if component.staging:
        staged = [line.split() for line in replaced if line.split()[0] == line.split()[2]]
        # `go mod tidy` keeps the requirement of those the binaries import; a replace line is what
        # pinned_requirement finds ("=>") for the others.
        if not staged or any(fields[-1] != component.staging or pinned_requirement(text, fields[0]) not in (component.staging, "=>") for fields in staged):
            return False
    return all(pinned_requirement(text, path) == version for path, version in pins.items()) and all(line in replaced for line in component.replace)


def sync_module(component: Component) -> bool:
    """Rewrites toolchain/modules/<name> when the pins moved; True when it did."""
    if module_is_current(component):
        return False
    directory = component.module_dir
    directory.mkdir(parents=True, exist_ok=True)
    print(f"toolchain: {component.name}: the pins moved, rewriting {directory.relative_to(ROOT)} (commit it)")
    env = go_env(component, readonly=False)
    if component.own_main:
        if not (directory / "main.go").is_file():
            raise BuildError(f"{component.name}: {directory / 'main.go'} is missing (written by hand, committed)")
    else:
        (directory / "tools.go").write_text(tools_go(component))
    (directory / "go.sum").unlink(missing_ok=True)
    (directory / "go.mod").write_text(wanted_go_mod(component, None))
    upstream = module_source(component, env) / "go.mod"
    (directory / "go.mod").write_text(wanted_go_mod(component, upstream.read_text()))
    go(["mod", "tidy", *(["-e"] if component.tidy_e else [])], directory, env, quiet=True)
    return True


# --------------------------------------------------------------------------- build into the cache


def cache_root() -> Path:
    base = os.environ.get("OCP_TOOLCHAIN_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ocp-toolchain"
    return Path(base)


LATER_FIELDS = {"own_main": False, "replace": (), "tidy_e": False, "packages": (), "staging": None}


def cache_key(component: Component, go_version_text: str) -> str:
    digest = hashlib.sha256()
    # Fields added later count only when set, so that adding one does not rebuild what was built before.
    shaping = {key: value for key, value in component.__dict__.items() if key not in LATER_FIELDS or value != LATER_FIELDS[key]}
    for part in (RECIPE, go_version_text, json.dumps(shaping, sort_keys=True, default=list)):
        digest.update(part.encode() + b"\0")
    for name in source_files(component):
        digest.update((component.module_dir / name).read_bytes())
    return digest.hexdigest()[:16]


def build(component: Component, target: Path) -> float:
    """Builds into target/ (bin/, share/), atomically: a failed build leaves nothing."""
    env = go_env(component)
    staging = Path(tempfile.mkdtemp(prefix=f".{component.name}-", dir=target.parent))
    started = time.monotonic()
    try:
        bin_dir = staging / "bin"
        bin_dir.mkdir()
        ldflags = " ".join(["-s", "-w", *(component.fill(flag) for flag in component.ldflags)])
        output = f"{bin_dir}/" if component.packages else str(bin_dir / component.binary)
        args = ["build", "-trimpath", "-ldflags", ldflags, "-o", output]
        if component.tags:
            args += ["-tags", ",".join(component.tags)]
        go([*args, *(["."] if component.own_main else main_packages(component))], component.module_dir, env)
        source = module_source(component, env) if component.beside or component.data else None
        for relative in component.beside:
            copied = bin_dir / Path(relative).name
            shutil.copyfile(source / relative, copied)
            copied.chmod(0o755)
        if source is not None and component.data:
            shutil.copytree(source / component.data, staging / "share" / "data")
            for path in (staging / "share").rglob("*"):
                path.chmod(0o755 if path.is_dir() else 0o644)  # the module cache's copies are read-only
        return settle(staging, target, started)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def settle(staging: Path, target: Path, started: float) -> float:
    """Marks a finished build (built.json: its seconds) and moves it into place in one rename, so that a
    target with built.json is whole; returns the seconds."""
    seconds = time.monotonic() - started
    (staging / "built.json").write_text(json.dumps({"seconds": round(seconds, 1), "at": int(time.time())}) + "\n")
    if target.exists():
        shutil.rmtree(target)
    os.rename(staging, target)
    return seconds


# --------------------------------------------------------------------------- npm packages


def npm_manifest(packages: list[NpmPackage]) -> dict:
    return {"private": True, "dependencies": {package.name: package.version for package in sorted(packages, key=lambda p: p.name)}}


def sync_npm(packages: list[NpmPackage]) -> bool:
    """Rewrites toolchain/npm/package-lock.json (every dependency at an exact version, with its integrity)
    when the pins moved; True when it did. Needs the npm registry; commit the result."""
    manifest, lock = NPM / "package.json", NPM / "package-lock.json"
    wanted = npm_manifest(packages)
    if lock.is_file() and manifest.is_file() and json.loads(manifest.read_text()) == wanted:
        return False
    print(f"toolchain: npm: the pins moved, rewriting {lock.relative_to(ROOT)} (commit it)")
    NPM.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(wanted, indent=2) + "\n")
    lock.unlink(missing_ok=True)
    result = subprocess.run(["npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=NPM, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"npm install --package-lock-only: {result.stderr.strip()[-1000:]}")
    return True


def npm_target() -> Path:
    digest = hashlib.sha256(RECIPE.encode() + b"\0" + (NPM / "package-lock.json").read_bytes()).hexdigest()[:16]
    return cache_root() / f"npm-{digest}"


def install_npm(target: Path) -> float:
    """`npm ci` of toolchain/npm's lock into target/node_modules, atomically: exactly the locked versions,
    each checked against its integrity; no install scripts run."""
    staging = Path(tempfile.mkdtemp(prefix=".npm-", dir=target.parent))
    started = time.monotonic()
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(NPM / name, staging / name)
        result = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=staging, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"npm ci: {result.stderr.strip()[-1000:]}")
        return settle(staging, target, started)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def npm_binaries(target: Path, package: NpmPackage) -> dict[str, Path]:
    """The package's `bin` entries, as its package.json names them."""
    directory = target / "node_modules" / package.name
    declared = json.loads((directory / "package.json").read_text()).get("bin", {})
    if isinstance(declared, str):
        declared = {package.name: declared}
    return {name: directory / path for name, path in declared.items()}


NPM_WRAPPER = """\
#!/bin/sh
# {name} {version} from the npm registry (toolchain/pins.toml), installed in the toolchain's cache.
exec node {script} "$@"
"""


# --------------------------------------------------------------------------- .toolchain/ in the checkout


ENV_FILE = """\
# The real toolchain of this checkout, made by `bash .ci/toolchain`. Source it:
#   . .toolchain/env
# Then `pulumi` is the CLI built here, with its Python language host beside it, on a local
# file backend, with plugins only from .toolchain/pulumi-home, and nothing downloaded.
_toolchain={root}/.toolchain
# The checkout's venv: the language host built here (see toolchain/pins.toml) takes the
# program's Python from PATH, not from Pulumi.yaml's runtime options.
export PATH="$_toolchain/bin:{root}/venv/bin:$PATH"
export PULUMI_HOME="$_toolchain/pulumi-home"
export PULUMI_BACKEND_URL="${{PULUMI_BACKEND_URL:-file://$_toolchain/state}}"
{switches}unset _toolchain
"""

# What keeps the CLI from downloading or calling home, and from plugins outside PULUMI_HOME.
CLI_SWITCHES = {
    "PULUMI_SKIP_UPDATE_CHECK": "the only call home: the CLI's check for a newer version",
    "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "a missing plugin fails at once instead of being downloaded",
    "PULUMI_IGNORE_AMBIENT_PLUGINS": "only plugins installed in PULUMI_HOME, never a pulumi-resource-* found on PATH",
}

INSTALLER_WRAPPER = """\
#!/bin/bash
# openshift-install {version}, built from its Go module without the `release` tag: it reads
# its templates from the module's data/data, copied beside it.
OPENSHIFT_INSTALL_DATA={data} exec -a "$0" {binary} "$@"
"""


def _place(source: Path, target: Path) -> None:
    """A hard link (a copy across file systems), not a symlink: the CLI looks for its language
    host beside the path it runs from, symlinks resolved."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def lay_out(built: dict[str, Path], status: dict[str, object], npm: dict[NpmPackage, Path] | None = None) -> None:
    """.toolchain/: bin/ (the cached binaries), env, pulumi-home/, state/, status.json."""
    bin_dir = LAYOUT / "bin"
    if bin_dir.exists():
        shutil.rmtree(bin_dir)
    bin_dir.mkdir(parents=True)
    for name, directory in built.items():
        if name == "openshift-install":
            wrapper = bin_dir / "openshift-install"
            wrapper.write_text(
                INSTALLER_WRAPPER.format(
                    version=status[name]["version"],  # type: ignore[index]
                    data=directory / "share" / "data",
                    binary=directory / "bin" / "openshift-install",
                )
            )
            wrapper.chmod(0o755)
            continue
        if status[name].get("plugin"):  # type: ignore[union-attr]
            continue  # into PULUMI_HOME below, never on PATH
        for executable in sorted((directory / "bin").iterdir()):
            _place(executable, bin_dir / executable.name)
    for package, target in (npm or {}).items():
        for name, script in npm_binaries(target, package).items():
            wrapper = bin_dir / name
            wrapper.write_text(NPM_WRAPPER.format(name=package.name, version=package.version, script=script))
            wrapper.chmod(0o755)
    for sub in ("pulumi-home", "state"):
        (LAYOUT / sub).mkdir(exist_ok=True)
    switches = "".join(f"# {why[0].upper()}{why[1:]}.\nexport {name}=true\n" for name, why in CLI_SWITCHES.items())
    (LAYOUT / "env").write_text(ENV_FILE.format(root=ROOT, switches=switches))
    (LAYOUT / "status.json").write_text(json.dumps(status, indent=2, sort_keys=True) + "\n")
    for name, directory in built.items():
        plugin = status[name].get("plugin")  # type: ignore[union-attr]
        if plugin:
            install_plugin(*plugin.split(), next((directory / "bin").iterdir()))  # a plugin build holds its one binary


def install_plugin(plugin: str, version: str, binary: Path) -> None:
    """`pulumi plugin install resource <name> <version> --file <binary>` into .toolchain/pulumi-home."""
    env = {**os.environ, "PULUMI_HOME": str(LAYOUT / "pulumi-home"), **dict.fromkeys(CLI_SWITCHES, "true")}
    pulumi = LAYOUT / "bin" / "pulumi"
    if not pulumi.is_file():
        raise BuildError(f"cannot install the {plugin} plugin: {pulumi} is not built")
    result = subprocess.run(
        [str(pulumi), "plugin", "install", "resource", plugin, version, "--file", str(binary), "--reinstall"],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise BuildError(f"pulumi plugin install resource {plugin} {version}: {result.stderr.strip()[-1000:]}")


def main(names: list[str]) -> int:
    if shutil.which("go") is None:
        print(
            "toolchain: Go is not installed: cannot build pulumi, pulumi-language-python or openshift-install "
            "(toolchain/pins.toml); install Go 1.23 or newer and run `bash .ci/toolchain` again. The tests that "
            "need them will skip.",
            file=sys.stderr,
        )
        return 3
    components = load_pins()
    unknown = sorted(set(names) - {component.name for component in components} - {package.name for package in load_npm_pins()})
    if unknown:
        print(f"toolchain: not in {PINS.relative_to(ROOT)}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    version = go_version()
    cache = cache_root()
    cache.mkdir(parents=True, exist_ok=True)
    built: dict[str, Path] = {}
    status: dict[str, object] = {}
    missing = []
    for component in components:
        entry: dict[str, object] = {"module": component.module, "version": component.version}
        if component.plugin:
            entry["plugin"] = f"{component.plugin} {component.plugin_version}"
        if not component.buildable:
            answer = refusal(component)
            entry["missing"] = (
                f"the module proxy refuses {component.module}@{component.version}: {answer}"
                if answer
                else f"{component.module}@{component.version} is served, but this toolchain has no build recipe for it yet"
            )
            missing.append(f"{component.name}: {entry['missing']}")
            status[component.name] = entry
            continue
        if names and component.name not in names:
            # Not asked for: laid out when built before (its pins unmoved), never rewritten nor built.
            target = cache / f"{component.name}-{cache_key(component, version)}" if module_is_current(component) else None
            if target is None or not (target / "built.json").is_file():
                entry["missing"] = f"not built by this run (`toolchain/build.py {' '.join(names)}`): {HOW}"
                status[component.name] = entry
                continue
            built[component.name] = target
            entry["path"] = str(target)
            status[component.name] = entry
            continue
        try:
            sync_module(component)
            target = cache / f"{component.name}-{cache_key(component, version)}"
            if (target / "built.json").is_file():
                print(f"toolchain: {component.name} {component.version}: built before, in {target}")
            else:
                print(f"toolchain: {component.name} {component.version}: building (cold, the installer takes longest) ...", flush=True)
                seconds = build(component, target)
                print(f"toolchain: {component.name} {component.version}: built in {seconds:.0f} s into {target}", flush=True)
        except BuildError as error:
            print(f"toolchain: {component.name}: {error}", file=sys.stderr)
            return 1
        built[component.name] = target
        entry["path"] = str(target)
        status[component.name] = entry
    npm: dict[NpmPackage, Path] = {}
    packages = load_npm_pins()
    if packages and (not names or any(package.name in names for package in packages)):
        try:
            if shutil.which("npm") is None:
                raise BuildError("npm is not installed (Debian: nodejs, npm)")
            sync_npm(packages)
            target = npm_target()
            if (target / "built.json").is_file():
                print(f"toolchain: npm packages ({', '.join(f'{p.name} {p.version}' for p in packages)}): installed before, in {target}")
            else:
                print("toolchain: npm packages: installing toolchain/npm/package-lock.json from the npm registry ...", flush=True)
                seconds = install_npm(target)
                print(f"toolchain: npm packages: installed in {seconds:.0f} s into {target}", flush=True)
            npm = dict.fromkeys(packages, target)
        except BuildError as error:
            # Like a module the proxy refuses: reported, and the tests that need them skip saying so.
            missing += [f"{package.name}: {error}" for package in packages]
    elif packages and (NPM / "package-lock.json").is_file() and (npm_target() / "built.json").is_file():
        npm = dict.fromkeys(packages, npm_target())  # not asked for: laid out when installed before
    for package in packages:
        entry: dict[str, object] = {"npm": package.name, "version": package.version}
        if package in npm:
            entry["path"] = str(npm[package])
        else:
            entry["missing"] = next((line for line in missing if line.startswith(f"{package.name}: ")), f"not installed: {HOW}")
        status[package.name] = entry
    try:
        lay_out(built, status, npm)
    except BuildError as error:
        print(f"toolchain: {error}", file=sys.stderr)
        return 1
    print(f"toolchain: laid out {LAYOUT.relative_to(ROOT)}/ (bin: {', '.join(sorted(p.name for p in (LAYOUT / 'bin').iterdir()))}); `. .toolchain/env` to use it")
    for line in missing:
        print(f"toolchain: missing {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The house's layout: small product modules, no import circles, the test harness (harness/) apart
from what a user runs, the public Pulumi SDK only in the product, and the offline plan's mock
engine's private SDK names listed here, pinned to the SDK."""

from __future__ import annotations

import ast
import importlib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("__main__.py", "cluster", "components", "ignition", "ocp")
PROJECT = (*PRODUCT, "tools", "harness", "tests")
# What a user runs: the program, its install driver and the offline plan (tools/). The test harness
# (harness/) may import them; they do not import it.
USER_SIDE = (*PRODUCT, "tools")
# The one way in, and why: while the local cloud (harness/localcloud) is up, the offline plan's
# real installer validates an integrated stack against it (tools/real_installer.py `_cloud`, which
# asks harness.localcloud.cloud.answering()). Nothing else may join this list.
HARNESS_IMPORTS_ALLOWED = {"tools.real_installer": {"harness.localcloud", "harness.localcloud.cloud"}}
MAX_LINES = 400

# The mock engine behind the offline plan (tools/mock_run.py, tools/preview.py) drives the SDK
# from inside, where no public API reaches: every pulumi.runtime name it uses, and why. A new
# Pulumi SDK may move or change any of them, so the version they were checked against is pinned.
PULUMI_VERSION = "3.272.0"
MOCK_ENGINE_SDK_NAMES = {
    # The unit-testing API (documented, but under pulumi.runtime).
    "pulumi.runtime.Mocks": "the provider answers",
    "pulumi.runtime.MockResourceArgs": "what new_resource receives",
    "pulumi.runtime.MockCallArgs": "what call receives",
    "pulumi.runtime.set_mocks": "runs the program against the mocks",
    # Internals.
    "pulumi.runtime.mocks": "MockMonitor, subclassed to record every registration and replay a deployed state",
    "pulumi.runtime.proto.resource_pb2": "the monitor's RegisterResourceResponse",
    "pulumi.runtime.rpc": "(de)serialising a registration's properties with secrets and unknowns kept",
    "pulumi.runtime.rpc._special_sig_key": "how a serialised secret is marked",
    "pulumi.runtime.rpc._special_secret_sig": "how a serialised secret is marked",
    "pulumi.runtime.settings.SETTINGS": "pending outputs, cleared between runs",
    "pulumi.runtime.stack.wait_for_rpcs": "waits for the program's registrations",
    "pulumi.runtime.sync_await._sync_await": "a registration answered inside the monitor's synchronous call",
    "pulumi.runtime.get_root_resource": "the stack's outputs",
}
MOCK_ENGINE = ("tools/mock_run.py", "tools/preview.py")


def _modules(roots: tuple[str, ...]) -> dict[str, Path]:
    """Module name -> file, for the files under these roots."""
    found = {}
    for root in roots:
        path = ROOT / root
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            if "__pycache__" in file.parts:
                continue
            parts = list(file.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = file
    return found


def _imports(file: Path, name: str, known: set[str]) -> set[str]:
    """The project modules `file` imports, anywhere in it (a late import in a function still runs)."""
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    return {target for target in targets if target in known and target != name}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _sdk_names(file: Path) -> set[str]:
    """The Pulumi SDK names a file imports or reaches through `pulumi.`, fully qualified."""
    tree = ast.parse(file.read_text())
    aliases: dict[str, str] = {}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pulumi":
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else "pulumi"
                    names.add(alias.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pulumi":
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                names.add(f"{node.module}.{alias.name}")
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:  # whole chains only
            dotted = _dotted(node)
            head, _, rest = dotted.partition(".")
            if head in aliases and rest:
                names.add(f"{aliases[head]}.{rest}")
    return names


def _private(name: str) -> bool:
    parts = name.split(".")
    return parts[:2] == ["pulumi", "runtime"] or any(part.startswith("_") for part in parts)


def test_no_product_module_is_over_400_lines():
    long = {
        str(file.relative_to(ROOT)): lines
        for file in _modules(PRODUCT).values()
        if (lines := len(file.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_import_circle_among_the_projects_modules():
    modules = _modules(PROJECT)
    graph = {name: _imports(file, name, set(modules)) for name, file in modules.items()}
    circles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                circles.append(" -> ".join(path[path.index(target) :] + [target]))
            elif target not in state:
                visit(target)
        path.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert circles == []


def test_the_graph_sees_a_late_import():
    # The check reads imports inside functions too: components.node_configs once imported
    # components.program from within __init__.
    modules = _modules(PROJECT)
    assert "cluster.clouds_yaml" in _imports(modules["components.node_configs"], "components.node_configs", set(modules))


def test_nothing_a_user_runs_imports_the_harness():
    known = set(_modules(PROJECT))
    found = {}
    for name, file in _modules(USER_SIDE).items():
        harness = {target for target in _imports(file, name, known) if target.split(".")[0] == "harness"}
        if harness:
            found[name] = harness
    assert found == HARNESS_IMPORTS_ALLOWED


def test_the_product_uses_no_private_pulumi_name():
    used = {}
    for name, file in _modules(PRODUCT).items():
        private = sorted(n for n in _sdk_names(file) if _private(n))
        text = file.read_text()
        private += [call for call in (".future()", ".is_known()") if call in text]
        if private:
            used[name] = private
    assert used == {}


def test_the_private_names_of_the_mock_engine_are_listed_and_exist():
    used = set().union(*(_sdk_names(ROOT / file) for file in MOCK_ENGINE))
    private = {name for name in used if _private(name)}
    # A listed module covers the names reached through it (pulumi.runtime.rpc.serialize_properties).
    unlisted = {name for name in private if not any(name == listed or name.startswith(listed + ".") for listed in MOCK_ENGINE_SDK_NAMES)}
    assert unlisted == set(), "list them in MOCK_ENGINE_SDK_NAMES, with why"
    assert {listed for listed in MOCK_ENGINE_SDK_NAMES if not any(n == listed or n.startswith(listed + ".") for n in private)} == set()
    for name in MOCK_ENGINE_SDK_NAMES:
        module, _, attribute = name.rpartition(".")
        try:
            importlib.import_module(name)
        except ImportError:
            assert hasattr(importlib.import_module(module), attribute), name


def test_a_pulumi_sdk_bump_forces_a_look_at_the_mock_engine():
    assert metadata.version("pulumi") == PULUMI_VERSION, (
        "the Pulumi SDK changed: check every name of MOCK_ENGINE_SDK_NAMES in its new source, "
        "run tests/tools and tests/components, then pin the new version here"
    )


def test_the_pure_core_imports_no_pulumi():
    imported = {name: [n for n in _sdk_names(file)] for name, file in _modules(("cluster",)).items()}
    assert {name: names for name, names in imported.items() if names} == {}

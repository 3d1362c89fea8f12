"""Benchmark of `python -m ocp status --all`: ten stacks against one (issue 52: at most twice as long).

    python -m harness.bench_status [--stacks 10] [--repeat 3] [--jobs 4] [--ports 1] [--latency-ms 0] [--secrets vault]

The real engine and the real OpenStack plugin (.toolchain, as tests/e2e has them) on a file backend: a small
project whose stacks each hold a provider and `--ports` ports in the cloud of ports (tests/e2e/neutron.py, started
as a process on loopback), each made by its own `pulumi up`. Then `status --all` runs in a fresh process per run
(what a user waits for; the project pointed at the scratch one), on a copy of the backend holding the first stack
alone and on the backend holding all of them; prints the medians, the ratio and the machine's load beside them.

`--latency-ms`: the cloud answers each request that much later while the reads are timed (not while the stacks are
made), as a remote cloud does; at 0 the reads cost only CPU, which two cores bound. `--secrets vault`: the stacks' keys
under a real Vault's transit engine (harness/vault.py), as docs/teams.md sets teams up, instead of a passphrase
(which the CLI stretches with 1,000,000 rounds of PBKDF2 on every command that decrypts).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import child, vault
from harness.kubeapi import free_port
from tests.e2e import neutron
from tools import toolchain

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 2.0
OPENSTACK = ("openstack", "5.5.3")
PLUGIN = ROOT / ".toolchain" / "pulumi-home" / "plugins" / f"resource-openstack-v{OPENSTACK[1]}" / "pulumi-resource-openstack"
PROGRAM = """
import pulumi
import pulumi_openstack as openstack

cloud = openstack.Provider(
    "cloud", auth_url="http://127.0.0.1:{port}/v3", user_name="tester", password="secret", tenant_name="tester",
    user_domain_name="Default", project_domain_name="Default", region="RegionOne",
)
ports = [
    openstack.networking.Port(
        "node-port" if index == 0 else f"node-port-{{index}}", name=f"{{pulumi.get_stack()}}-worker-{{index}}", network_id="net-1",
        admin_state_up=True, tags=["bench"], opts=pulumi.ResourceOptions(provider=cloud),
    )
    for index in range({ports})
]
pulumi.export("portId", ports[0].id)
"""
# `python -m ocp status --all` with the project pointed at the scratch one (the CLI's own main, arguments as given).
RUN = "import sys; from pathlib import Path; from ocp import driver; driver.PROJECT = Path(sys.argv[1]); from ocp.__main__ import main; sys.exit(main(sys.argv[2:]))"


def pulumi(env: dict[str, str], project: Path, *args: str) -> None:
    done = subprocess.run(["pulumi", *args, "--non-interactive"], cwd=project, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pulumi {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}")


def status_all(env: dict[str, str], project: Path, jobs: int) -> tuple[float, float, int, dict]:
    """Wall seconds, CPU seconds (user and system, the process and every process it waited for: the Pulumi CLI's,
    the plugins'), exit code and the report of one `status --all --json` in a fresh process."""
    began = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen([sys.executable, "-c", RUN, str(project), "status", "--all", "--json", "--jobs", str(jobs)], cwd=ROOT, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - began
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        report, said = out.read().decode(), err.read().decode()
    if code not in (0, 1, 2) or not report:
        raise RuntimeError(f"status --all failed ({code}): {said[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, code, json.loads(report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench_status", description=__doc__.split("\n")[0])
    parser.add_argument("--stacks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=4, help="status --all --jobs (default 4, the CLI's default)")
    parser.add_argument("--ports", type=int, default=1, help="ports in each stack (default 1)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="the cloud's delay per request while the reads are timed")
    parser.add_argument("--secrets", choices=("passphrase", "vault"), default="passphrase", help="the stacks' secrets provider")
    parser.add_argument("--keep", type=Path, help="copy the scratch project, backends and cloud here at the end")
    args = parser.parse_args(argv)
    if toolchain.binary("pulumi") is None or not PLUGIN.is_file():
        print("needs the toolchain: bash .ci/toolchain", file=sys.stderr)
        return 2
    if args.secrets == "vault" and vault.missing():
        print(f"--secrets vault: {vault.missing()}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-status-") as scratch, contextlib.ExitStack() as keys:
        work = Path(scratch)
        port = free_port()
        project = work / "project"
        project.mkdir()
        (work / "all").mkdir()
        (project / "Pulumi.yaml").write_text("name: bench\nruntime: python\n")
        (project / "__main__.py").write_text(PROGRAM.format(port=port, ports=max(1, args.ports)))
        env = toolchain.pulumi_env(work / "home", work / "all", ROOT / "venv")
        init = ["stack", "init"]
        if args.secrets == "vault":
            server = keys.enter_context(vault.running(work / "vault"))
            env, init = {**env, **server.env()}, [*init, "--secrets-provider", server.secrets_provider]
        else:
            env = {**env, "PULUMI_CONFIG_PASSPHRASE": "bench-only"}
        cloud = neutron.start(port, work / "cloud.json", "--no-log")
        try:
            pulumi(env, project, "plugin", "install", "resource", *OPENSTACK, "--file", str(PLUGIN))
            names = [f"s{index:02d}" for index in range(args.stacks)]
            began = time.monotonic()
            for name in names:
                pulumi(env, project, *init, name)
            with ThreadPoolExecutor(2) as pool:  # the ups: setup, not measured
                list(pool.map(lambda name: pulumi(env, project, "up", "--yes", "--skip-preview", "--stack", name), names))
            print(f"{args.stacks} stacks of {args.ports} port(s) made in {time.monotonic() - began:.0f} s", file=sys.stderr)
            if args.latency_ms:
                child.stop(cloud)
                cloud = neutron.start(port, work / "cloud.json", "--no-log", f"--latency-ms={args.latency_ms}")
            # The backend of one stack: a copy of the whole with the others' files taken out.
            shutil.copytree(work / "all", work / "one")
            for path in [path for path in (work / "one" / ".pulumi").rglob("*") if path.is_dir() and path.parent.name == "bench" and path.name in names[1:]]:
                shutil.rmtree(path)
            for path in list((work / "one" / ".pulumi" / "stacks" / "bench").iterdir()):
                if path.name.split(".")[0] in names[1:]:
                    path.unlink()
            one_env = {**env, "PULUMI_BACKEND_URL": f"file://{work / 'one'}"}
            runs: dict[str, list[float]] = {"one": [], "all": []}
            cpu: dict[str, list[float]] = {"one": [], "all": []}
            for _ in range(args.repeat):  # interleaved: a change of the machine's load falls on both
                for label, run_env, count in (("one", one_env, 1), ("all", env, args.stacks)):
                    seconds, used, code, report = status_all(run_env, project, args.jobs)
                    verdicts = [entry["verdict"] for entry in report["stacks"]]
                    assert len(verdicts) == count, f"{label}: {len(verdicts)} stacks reported, not {count}"
                    runs[label].append(seconds)
                    cpu[label].append(used)
                    print(
                        f"  {label:3}: {seconds:6.1f} s, {used:6.1f} CPU-s (exit {code}, {count} stacks: {', '.join(sorted(set(verdicts)))}; "
                        f"load {os.getloadavg()[0]:.1f})", file=sys.stderr,
                    )
            if args.keep:
                shutil.copytree(work, args.keep, symlinks=True, dirs_exist_ok=True)
        finally:
            child.stop(cloud)
    one, every = statistics.median(runs["one"]), statistics.median(runs["all"])
    one_cpu, every_cpu = statistics.median(cpu["one"]), statistics.median(cpu["all"])
    ratio = every / one
    print(f"status --all, --jobs {args.jobs}, {args.ports} port(s) a stack, the cloud {args.latency_ms:.0f} ms a request, keys by {args.secrets}: 1 stack {one:.1f} s, {args.stacks} stacks {every:.1f} s (medians of {args.repeat}): ratio {ratio:.2f}")
    print(
        f"  CPU: 1 stack {one_cpu:.1f} CPU-s, {args.stacks} stacks {every_cpu:.1f} CPU-s; on {os.cpu_count()} cores the {args.stacks} stacks "
        f"need at least {every_cpu / (os.cpu_count() or 1):.1f} s of wall time"
    )
    print(f"  {'met ' if ratio <= TARGET_RATIO else 'MISSED'}  {args.stacks} stacks within {TARGET_RATIO}x of one")
    print(json.dumps({"one_s": one, "all_s": every, "ratio": ratio, "one_cpu_s": one_cpu, "all_cpu_s": every_cpu, "stacks": args.stacks, "jobs": args.jobs, "cores": os.cpu_count(), "ports": args.ports, "latency_ms": args.latency_ms, "secrets": args.secrets}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

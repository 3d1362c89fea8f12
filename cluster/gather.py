"""`openshift-install gather bootstrap`, for a bootstrap that does not hand over (OpenStack: the bootstrap admits
SSH from where `pulumi up` runs). Pure Python.

The `bootstrapGather` stack output shows it as one line; the install driver never runs that line (a writer of the
state could put anything there): it makes the words again from the stack file and the address plan and runs them
without a shell. Of the output it reads only the bootstrap's floating IP, which only the cloud knew, as an IP address.
"""

from __future__ import annotations

import ipaddress
import shlex

from cluster.addresses import AddressPlan, plan_addresses
from cluster.config import ClusterConfig
from cluster.installer import installer_dir


def gather_bootstrap_argv(config: ClusterConfig, plan: AddressPlan, stack: str, bootstrap_host: str) -> list[str]:
    """`openshift-install gather bootstrap` as it runs where `pulumi up` runs: SSH to the
    bootstrap, and through it to the masters; the log bundle lands in the installer's --dir.
    Every word from the stack file and the plan but `bootstrap_host` (an address: see gather_host)."""
    installer = config.installer
    directory = installer.assets_dir or installer_dir(config, stack)
    words = [installer.binary or "openshift-install", "gather", "bootstrap", "--dir", directory, "--bootstrap", bootstrap_host]
    for master in plan.masters:
        words += ["--master", str(master.ip)]
    if config.bootstrap.helper.ssh_private_key_file:
        words += ["--key", config.bootstrap.helper.ssh_private_key_file]
    return words


def gather_bootstrap_command(config: ClusterConfig, plan: AddressPlan, stack: str, bootstrap_host: str) -> str:
    """The same as one line to read (the `bootstrapGather` output): the install driver never runs it, it
    rebuilds the words from the stack file (a writer of the state could put anything in an output)."""
    return shlex.join(gather_bootstrap_argv(config, plan, stack, bootstrap_host))


def gather_argv(config: ClusterConfig, stack: str, shown: str | None) -> list[str] | None:
    """What the install driver runs when the bootstrap does not complete (OpenStack: the bootstrap admits
    SSH from here), without a shell; None where there is nothing to gather from. `shown`: the
    `bootstrapGather` output, read for the floating IP's address alone."""
    if config.platform != "openstack":
        return None
    plan = plan_addresses(config)
    host = gather_host(config, plan, shown)
    return None if host is None else gather_bootstrap_argv(config, plan, stack, host)


def gather_host(config: ClusterConfig, plan: AddressPlan, shown: str | None) -> str | None:
    """The bootstrap's address for the gather: the plan's, or with a floating IP (known only to the
    state) the `--bootstrap` word of the `bootstrapGather` output, taken only as an IP address; None
    when that is not one."""
    if not config.bootstrap_floating_ip:
        return str(plan.bootstrap.ip)
    try:
        words = shlex.split(shown or "")
        return str(ipaddress.ip_address(words[words.index("--bootstrap") + 1]))
    except (ValueError, IndexError):
        return None


def gathering(argv: list[str]) -> str:
    """What the driver says as it runs the gather: the words as one line a shell would read the same."""
    return f"the bootstrap did not complete: gathering its logs ({shlex.join(argv)})"

"""The stack's config as the engine hands it to the program, through the public SDK only.

`pulumi.Config` reads one key at a time; it cannot list the keys that are set, nor say which
were set with `--secret`. Both come from the stack file beside the program
(`Pulumi.<stack>.yaml`, where the CLI writes every key and marks secrets `secure:`). Every
key the program knows is read whether the file lists it or not, so a key given another way
(`pulumi up --config-file`, an environment) is still read; only the check for unknown keys
and the secret flags need the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi

from cluster.config import KNOWN_KEYS, NAMESPACE, PROVIDER_CLOUD
from cluster.stackfile import read_stack_file


@dataclass(frozen=True)
class StackConfig:
    raw: dict[str, str]  # `ocp:key -> text` (objects as JSON text), what load_config reads
    secret: frozenset[str]  # the keys set with --secret, `ocp:key`


def read_stack_config(project_dir: Path, stack: str) -> StackConfig:
    """The program's keys and those of the stack file, as plain text. The pure core needs the
    plain values to check the config before any resource; resources get secrets as Outputs
    (components/program.py), and cluster.config.secret_problems refuses a secret that
    would reach a resource in clear."""
    listed: tuple[str, ...] = ()
    secret = {f"{NAMESPACE}:pullSecret"}  # declared secret in Pulumi.yaml; the CLI refuses it in clear
    path = project_dir / f"Pulumi.{stack}.yaml"
    if path.is_file():
        stack_file = read_stack_file(path)
        listed = tuple(stack_file.config) + stack_file.encrypted_keys
        secret.update(stack_file.encrypted_keys)
    ocp = pulumi.Config(NAMESPACE)
    raw = {}
    for full_key in dict.fromkeys([f"{NAMESPACE}:{key}" for key in KNOWN_KEYS] + list(listed)):
        namespace, _, key = full_key.partition(":")
        value = ocp.get(key) if namespace == NAMESPACE else None
        if value is not None:
            raw[full_key] = value
    cloud = pulumi.Config(PROVIDER_CLOUD.partition(":")[0]).get(PROVIDER_CLOUD.partition(":")[2])
    if cloud is not None:
        raw[PROVIDER_CLOUD] = cloud
    return StackConfig(raw, frozenset(key for key in secret if key.startswith(f"{NAMESPACE}:")))


def secret_output(key: str) -> pulumi.Output[str]:
    """A key's value as a secret Output, as resources take it (`ocp:` namespace)."""
    return pulumi.Config(NAMESPACE).require_secret(key)

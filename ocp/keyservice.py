"""The stack's key service failing, in one line saying what to do: a stack whose secrets are under
Vault's transit engine (`pulumi stack init --secrets-provider hashivault://KEY`) needs VAULT_ADDR and
a token in VAULT_TOKEN for every command that decrypts (the engine unwraps the stack's data key with
`transit/decrypt/KEY` first, before any step). The engine's own words are Vault's API error, two
errors deep; these name the variable to fix (docs/teams.md, "Secrets under Vault")."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from pulumi import automation as auto

HOW = "docs/teams.md, Secrets under Vault"
NOTHING = "nothing was changed"
# What gocloud's hashivault keeper (in the Pulumi CLI) prints when Vault answers, and when it cannot be reached.
_ANSWERED = re.compile(r"URL: (?:PUT|POST) (?P<addr>https?://\S+?)/v1/(?P<mount>\S+)/(?P<op>encrypt|decrypt)/(?P<key>[^\s/]+)\s+Code: (?P<code>\d{3})")
_UNREACHED = re.compile(r'(?:Put|Post) "(?P<addr>https?://[^"]+?)/v1/(?P<mount>[^"]+)/(?P<op>encrypt|decrypt)/(?P<key>[^"/]+)": (?P<why>[^\n]+)')
_UNSET = "neither VAULT_SERVER_URL nor VAULT_ADDR environment variables are set"


def problem(text: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """One line for a Pulumi command that failed on the stack's Vault key, or None when `text` is not that."""
    if _UNSET in text:
        return (
            "VAULT_ADDR is not set, and the stack's secrets are under Vault (its stack file's secretsprovider: hashivault://...): "
            f"set VAULT_ADDR to your Vault's address and VAULT_TOKEN to your token ({HOW}), then run again; {NOTHING}"
        )
    unreached = _UNREACHED.search(text)
    if unreached:
        why = unreached["why"].rsplit(": ", 1)[-1]
        return (
            f"Vault at VAULT_ADDR ({unreached['addr']}) does not answer ({why}), and the stack's secrets are under its key "
            f"{unreached['key']}: set VAULT_ADDR to your Vault's address, then run again; {NOTHING}"
        )
    answered = _ANSWERED.search(text)
    if not answered:
        return None
    addr, mount, op, key, code = answered.group("addr", "mount", "op", "key", "code")
    if code == "403":
        if not (environ.get("VAULT_TOKEN") or environ.get("VAULT_SERVER_TOKEN")):
            return (
                f"VAULT_TOKEN is not set, and Vault at {addr} refuses {mount}/{op}/{key} without a token (403): "
                f"set VAULT_TOKEN to your token for the stack's key ({HOW}), then run again; {NOTHING}"
            )
        return (
            f"Vault at {addr} refused the token in VAULT_TOKEN (403 permission denied on {mount}/{op}/{key}: a wrong, expired or "
            f"revoked token, or one whose policy does not allow update on {mount}/encrypt/{key} and {mount}/decrypt/{key}): "
            f"set VAULT_TOKEN to a valid token for that key ({HOW}), then run again; {NOTHING}"
        )
    if code in ("400", "404"):
        return (
            f"Vault at {addr} has no transit key {key} at {mount}/ ({code} on {mount}/{op}/{key}): check VAULT_ADDR and the stack "
            f"file's secretsprovider (hashivault://{key}), or ask your Vault's admins for the key ({HOW}); {NOTHING}"
        )
    return f"Vault at VAULT_ADDR ({addr}) failed the stack's key ({code} on {mount}/{op}/{key}): run again once Vault answers; {NOTHING}"


@contextmanager
def decrypting(command: str, stop: Callable[[str], Exception], errors: Callable[[str], str]) -> Iterator[None]:
    """A Pulumi command that decrypts: its failure raised as `stop`, in one line (the key service's, else the engine's errors)."""
    try:
        yield
    except auto.CommandError as error:
        raise stop(problem(str(error)) or f"{command} failed: {errors(str(error))}") from error

"""The bootstrap's Keystone credential (ocp:bootstrap.credential), pure: what it may do, until when,
and what the program makes of the token check's answer (components/openstack/bootstrap_token.py).

With `applicationCredential` (the default) the bootstrap's shim carries a token of an application
credential made for it alone: restricted (it cannot make credentials or trusts), one access rule
(service `image`, `GET`, its own image's `/v2/images/<id>/file`), expiring 24 h after the
installer made the configs (their certificates expire then: no bootstrap can use it later), and
deleted with the bootstrap, which revokes its tokens. Keystone honours access rules from Train
on, and only where each service's keystonemiddleware knows its own service type
(`[keystone_authtoken] service_type`); elsewhere the token is refused by Glance (or, where the
cloud ignores the rule, can do what the user can): the check says which, and `userToken` gives
the bootstrap the user's own token instead, warned on every run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

# The installer's configs carry certificates valid this long (FACTS, cluster.installer).
LIFETIME = timedelta(hours=24)
# Run by pulumi-command's local.run; the mock cloud answers this very command.
TOKEN_COMMAND = 'exec "$OCP_PYTHON" "$OCP_TOKEN_SCRIPT"'
FALLBACK = "write ocp:bootstrap.credential: userToken to give the bootstrap your own token instead (warned on every run)"


def access_rule_path(image_id: str) -> str:
    """The one request the credential's tokens may make: the image's data, as the shim fetches it."""
    return f"/v2/images/{image_id}/file"


def expires_at(generated_at: float) -> str:
    """When the credential expires, from when the configs were made: the same on every run."""
    moment = datetime.fromtimestamp(generated_at, timezone.utc) + LIFETIME
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class TokenCheck:
    token: str
    warning: str | None = None
    error: str | None = None


def token_check(stdout: str, expiry: str) -> TokenCheck:
    """The token for the shim, from the check's JSON line, or why there is none."""
    answer = json.loads(stdout)
    if answer.get("expired"):
        return TokenCheck(
            "",
            warning=(
                f"ocp:bootstrap.enabled: the bootstrap's application credential expired at {expiry}, 24 h after the "
                "installer made its configs: a bootstrap made now could fetch nothing (and its certificates have "
                "expired too). If `openshift-install wait-for bootstrap-complete` passed, set ocp:bootstrap.enabled: false"
            ),
        )
    if "unreachable" in answer:
        return TokenCheck(
            "",
            error=(
                f"ocp:bootstrap.credential: Keystone or the image endpoint did not answer the bootstrap's token check "
                f"({answer['unreachable']}) from where `pulumi up` runs, which reaches them for everything else"
            ),
        )
    if "keystone" in answer:
        return TokenCheck(
            "",
            error=(
                f"ocp:bootstrap.credential: Keystone answered {answer['keystone']} when asked for a token of the "
                "bootstrap's application credential. A Keystone older than Train has no access rules: " + FALLBACK
            ),
        )
    if "methods" in answer:
        return TokenCheck(
            "",
            error=(
                f"ocp:bootstrap.credential: Keystone gave a token by {answer['methods']}, not by the bootstrap's "
                "application credential: " + FALLBACK
            ),
        )
    if answer["read"] not in (200, 206):
        return TokenCheck(
            "",
            error=(
                f"ocp:bootstrap.credential: the image service answered {answer['read']} when the bootstrap's "
                "application credential read its own image's file: this cloud's Glance does not honour access rules "
                "(its operator sets service_type = image under [keystone_authtoken]): " + FALLBACK
            ),
        )
    if answer["listed"] < 400:
        return TokenCheck(
            answer["token"],
            warning=(
                "ocp:bootstrap.credential: this cloud's image service let the bootstrap's application credential list "
                "images, which its access rule does not allow: the cloud ignores access rules, so the bootstrap's "
                "token can do what you can in the project until it expires (Keystone's token lifetime) or the "
                "bootstrap is torn down"
            ),
        )
    return TokenCheck(answer["token"])


USER_TOKEN_WARNING = (
    "ocp:bootstrap.credential: userToken: the bootstrap's user_data carries your own Keystone token, which can do "
    "what you can in the project for Keystone's token lifetime (1 h by default), and the bootstrap's metadata "
    "service serves it to anything on that node. Remove the key where the cloud honours application credentials' "
    "access rules (Keystone Train or later)"
)

"""The bootstrap's Keystone credential (ocp:bootstrap.credential), pure: what it may do, until when,
and what the program makes of the token check's answer (components/openstack/bootstrap_token.py).

With `applicationCredential` (the default) the bootstrap's shim carries a token of an application
credential made for it alone: restricted (it cannot make credentials or trusts), one access rule
(service `image`, `GET`, its own image's `/v2/images/<id>/file`), expiring 24 h after the
installer made the configs (their certificates expire then: no bootstrap can use it later), and
deleted with the bootstrap, which revokes its tokens. Keystone honours access rules from Train
on, and only where each service's keystonemiddleware knows its own service type
(`[keystone_authtoken] service_type`); elsewhere the token is refused by Glance (or, where the
cloud ignores the rule, can do what the user can): the check says which and stops, and `userToken`
gives the bootstrap the user's own token instead, warned on every run. The credential always names
its role (`member`): without one, Keystone gives it all of the user's. Its secret never crosses plain
http unless the stack says so (allowHttpIdentityEndpoint).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from cluster.config import ClusterConfig

# The installer's configs carry certificates valid this long (FACTS, cluster.installer).
LIFETIME = timedelta(hours=24)
# Run by pulumi-command's local.run; the mock cloud answers this very command.
TOKEN_COMMAND = 'exec "$OCP_PYTHON" "$OCP_TOKEN_SCRIPT"'
FALLBACK = "write ocp:bootstrap.credential: userToken to give the bootstrap your own token instead (warned on every run)"
# The role the credential names: Glance's download policy asks for it (oslo.policy compares role names ignoring case).
MEMBER = "member"
# Set in the check's environment where the stack accepts a plain http identity endpoint.
ALLOW_HTTP = "OCP_ALLOW_HTTP_IDENTITY"
_LAB = "on a lab cloud whose network you trust, write ocp:bootstrap.allowHttpIdentityEndpoint: true"


def _plain_http(url: str) -> bool:
    return url.strip().lower().startswith("http://")


def plain_http_catalog_identity(config: ClusterConfig, url: str) -> str | None:
    """The refusal of the catalog's http identity endpoint, where the provider makes the bootstrap's
    application credential (its secret comes back in the answer) and the check sends the secret."""
    if not config.uses_glance or config.bootstrap.credential != "applicationCredential":
        return None
    if config.bootstrap.allow_http_identity_endpoint or not _plain_http(url):
        return None
    return (
        f"ocp:bootstrap.allowHttpIdentityEndpoint: the service catalog's public identity endpoint {url} is plain http: "
        "the bootstrap's application credential would be made there, and its ID and secret sent there for a token on "
        "every run while the bootstrap exists, unencrypted. Ask the cloud's operator for an https endpoint, or write "
        f"ocp:bootstrap.configSource: helper (no credential); {_LAB}"
    )


def plain_http_auth_url(config: ClusterConfig, url: str, entry: str) -> str | None:
    """The refusal of a clouds.yaml entry's http auth_url (`entry` says which, and where), where the
    provider logs in and gets the token that makes the credential, or that the bootstrap carries."""
    if not config.uses_glance or config.bootstrap.allow_http_identity_endpoint or not _plain_http(url):
        return None
    what = (
        "the token the bootstrap carries (ocp:bootstrap.credential: userToken)"
        if config.bootstrap.credential == "userToken"
        else "the token the bootstrap's application credential is made with"
    )
    return (
        f"ocp:bootstrap.allowHttpIdentityEndpoint: the clouds.yaml entry {entry} has auth_url {url}, plain http: the "
        f"provider logs in there with your credentials and gets back {what}, unencrypted. Write the cloud's https "
        f"identity URL as its auth_url, or write ocp:bootstrap.configSource: helper; {_LAB}"
    )


def member_role(roles: Iterable[str]) -> str | None:
    """The token's role the credential names: `member` as the token spells it."""
    found = [role for role in roles if role.lower() == MEMBER]
    return MEMBER if MEMBER in found else next(iter(found), None)


def member_role_problem(config: ClusterConfig, roles: Iterable[str], project: str) -> str | None:
    """Why the bootstrap's credential cannot be made with `member` alone: the token has no such role."""
    roles = sorted(set(roles))
    if not config.uses_glance or config.bootstrap.credential != "applicationCredential" or member_role(roles):
        return None
    return (
        f"ocp:bootstrap.credential: your token has roles {', '.join(roles) or 'none'} in project {project}, not "
        f"`{MEMBER}`: the bootstrap's application credential names that one role, which Glance's download policy "
        "asks for (a credential naming none would carry all of yours). Ask the cloud's operator for the member role "
        "in the project, or " + FALLBACK
    )


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
    if "plainHttp" in answer:  # the component refuses first; the check never sends the secret there either
        return TokenCheck(
            "",
            error=(
                f"ocp:bootstrap.allowHttpIdentityEndpoint: the bootstrap's token check would have sent the application "
                f"credential's secret to {answer['plainHttp']}, plain http, and did not: {_LAB}"
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
            "",
            error=(
                f"ocp:bootstrap.credential: this cloud's image service answered {answer['listed']} when the bootstrap's "
                "application credential listed images, which its access rule does not allow: the cloud ignores access "
                "rules, so its token could do what you can in the project, and the bootstrap is not given it. Ask the "
                "cloud's operator to set service_type = image under Glance's [keystone_authtoken], or " + FALLBACK + "; "
                "that run deletes this credential"
            ),
        )
    return TokenCheck(answer["token"])


USER_TOKEN_WARNING = (
    "ocp:bootstrap.credential: userToken: the bootstrap's user_data carries your own Keystone token, which can do "
    "what you can in the project for Keystone's token lifetime (1 h by default), and the bootstrap's metadata "
    "service serves it to anything on that node. Remove the key where the cloud honours application credentials' "
    "access rules (Keystone Train or later)"
)

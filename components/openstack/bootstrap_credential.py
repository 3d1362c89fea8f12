"""The token in the bootstrap's Glance shim (ocp:bootstrap.credential; what and why in
cluster/bootstrap_credential.py): an application credential that may only read the bootstrap's
image, or the user's own token where the cloud cannot."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack

from cluster.bootstrap_credential import (
    ALLOW_HTTP,
    TOKEN_COMMAND,
    USER_TOKEN_WARNING,
    access_rule_path,
    expires_at,
    member_role,
    member_role_problem,
    plain_http_catalog_identity,
    token_check,
)
from cluster.config import ClusterConfig
from cluster.installer import InstallerAssets
from cluster.preflight import public_endpoint
from components.openstack.common import ClusterContext
from components.openstack.preflight import catalog_of

TOKEN_SCRIPT = Path(__file__).resolve().with_name("bootstrap_token.py")


def bootstrap_token(
    name: str,
    cluster: ClusterContext,
    image: openstack.images.Image,
    file_url: pulumi.Output[str],
    scope: pulumi.Output[openstack.identity.GetAuthScopeResult],
    assets: pulumi.Output[InstallerAssets],
    cloud_ca: str | None,
    parent: pulumi.Resource,
) -> pulumi.Output[str]:
    """The token for the shim's X-Auth-Token (a secret), made once per run."""
    if cluster.config.bootstrap.credential == "userToken":
        pulumi.log.warn(USER_TOKEN_WARNING)
        return pulumi.Output.secret(scope.token_id)
    expiry = pulumi.Output.all(assets, image.created_at).apply(lambda values: _expiry(*values))
    config = cluster.config
    # The preflight refuses an http identity endpoint first; where it is skipped, the credential
    # waits for the same check: it is made there, and its secret comes back from there.
    keystone = scope.apply(lambda found: _identity_endpoint(config, found.service_catalogs, found.region))
    credential = openstack.identity.ApplicationCredential(
        f"{name}-credential",
        name=pulumi.Output.all(keystone, cluster.named("bootstrap-ignition")).apply(lambda values: values[1]),
        description=cluster.named("ignition").apply(lambda image_name: f"the bootstrap reads image {image_name}; deleted with it"),
        unrestricted=False,
        # Only `member` (and what it implies), which Glance's download policy asks for: not the deployer's
        # other roles (admin, manager). Never none: Keystone would give the credential all the token's roles.
        roles=scope.apply(lambda found: _roles(config, found)),
        access_rules=[
            openstack.identity.ApplicationCredentialAccessRuleArgs(service="image", method="GET", path=image.id.apply(access_rule_path))
        ],
        expires_at=expiry,
        # Keystone wants credential names unique per user: the old one goes first. The running
        # bootstrap fetched its config at first boot and needs no token after. Keystone reads the
        # roles back with those they imply (member: reader), so a refresh would replace it for them.
        opts=pulumi.ResourceOptions(parent=parent, delete_before_replace=True, ignore_changes=["roles"]),
    )
    environment = {
        "OCP_PYTHON": sys.executable,
        "OCP_TOKEN_SCRIPT": str(TOKEN_SCRIPT),
        "OCP_KEYSTONE_URL": keystone,
        "OCP_CREDENTIAL_ID": credential.id,
        "OCP_CREDENTIAL_SECRET": pulumi.Output.secret(credential.secret),
        "OCP_IMAGE_FILE_URL": file_url,
        "OCP_EXPIRES_AT": expiry,
        "OCP_CLOUD_CA": cloud_ca or "",
        ALLOW_HTTP: "true" if config.bootstrap.allow_http_identity_endpoint else "false",
    }
    run = command.local.run_output(
        command=TOKEN_COMMAND,
        environment=environment,
        logging=command.local.Logging.NONE,  # stdout is the token
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    return pulumi.Output.secret(pulumi.Output.all(run.stdout, expiry).apply(lambda values: _token(*values)))


def _expiry(assets: InstallerAssets, created_at: str | None) -> str:
    if assets.record is not None:
        return expires_at(assets.record.generated_at)
    if created_at:  # configs of an older release, without their record: the image's creation
        return expires_at(datetime.fromisoformat(created_at.replace("Z", "+00:00")).timestamp())
    raise pulumi.RunError("ocp:bootstrap.credential: neither the installer's record nor the image says when the configs were made")


def _identity_endpoint(config: ClusterConfig, services: object, region: str | None) -> str:
    url = public_endpoint(catalog_of(services), "identity", region or "")
    if url is None:
        raise pulumi.RunError(
            "ocp:bootstrap.credential: the service catalog has no public identity endpoint to get the bootstrap's token "
            "from: write ocp:bootstrap.credential: userToken"
        )
    refusal = plain_http_catalog_identity(config, url)  # the preflight's too
    if refusal:
        raise pulumi.RunError(refusal)
    return url


def _roles(config: ClusterConfig, scope: openstack.identity.GetAuthScopeResult) -> list[str]:
    names = [role.role_name for role in scope.roles or () if role.role_name]
    role = member_role(names)
    if role is None:  # the preflight's too
        raise pulumi.RunError(member_role_problem(config, names, scope.project_id or "?") or "")
    return [role]


def _token(stdout: str, expiry: str) -> str:
    check = token_check(stdout, expiry)
    if check.error:
        raise pulumi.RunError(check.error)
    if check.warning:
        pulumi.log.warn(check.warning)
    return check.token

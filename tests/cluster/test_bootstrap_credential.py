"""cluster.bootstrap_credential and the http refusals, pure: the credential's expiry and role, what a
token check's answer becomes, which image and identity endpoints the bootstrap's token may cross."""

from __future__ import annotations

import json

from cluster.bootstrap_credential import (
    access_rule_path,
    expires_at,
    member_role,
    member_role_problem,
    plain_http_auth_url,
    plain_http_catalog_identity,
    token_check,
)
from cluster.config import load_config
from cluster.preflight import plain_http_image_endpoint
from tests.conftest import stack_config, with_section


def test_the_credential_expires_24_hours_after_the_configs_were_made():
    assert expires_at(1_795_597_200) == "2026-11-26T09:00:00Z"  # made 2026-11-25 09:00 UTC
    assert access_rule_path("1f0c") == "/v2/images/1f0c/file"


def test_an_expired_credential_is_warned_and_gives_no_token():
    check = token_check(json.dumps({"expired": True}), "2026-11-27T06:20:00Z")
    assert check.token == "" and check.error is None
    assert check.warning is not None and check.warning.startswith("ocp:bootstrap.enabled: the bootstrap's application credential expired at 2026-11-27T06:20:00Z")


def test_a_token_not_of_the_credential_or_no_answer_stops_the_run():
    check = token_check(json.dumps({"methods": ["password"]}), "")
    assert check.error is not None and "not by the bootstrap's application credential" in check.error
    check = token_check(json.dumps({"unreachable": "timed out"}), "")
    assert check.error is not None and check.error.startswith("ocp:bootstrap.credential:") and "timed out" in check.error


def test_only_a_plain_http_endpoint_the_stack_does_not_allow_is_refused():
    strict = load_config(with_section(stack_config("dev"), "bootstrap", allowHttpImageEndpoint=None))
    assert plain_http_image_endpoint(strict, "https://image.example:9292") is None
    refusal = plain_http_image_endpoint(strict, "HTTP://image.example:9292")
    assert refusal is not None and refusal.startswith("ocp:bootstrap.allowHttpImageEndpoint: ")
    assert plain_http_image_endpoint(load_config(stack_config("dev")), "http://127.0.0.1:9292") is None  # a lab cloud
    helper = load_config(with_section(stack_config("dev"), "bootstrap", allowHttpImageEndpoint=None, configSource="helper"))
    assert plain_http_image_endpoint(helper, "http://image.example:9292") is None  # nothing goes there


def test_a_token_that_lists_images_despite_the_rule_stops_the_run_and_names_user_token():
    check = token_check(json.dumps({"token": "gAAAA-t", "read": 200, "listed": 200}), "")
    assert check.token == "" and check.warning is None and check.error is not None, check
    assert check.error.startswith("ocp:bootstrap.credential: this cloud's image service answered 200 when the bootstrap's")
    assert "write ocp:bootstrap.credential: userToken" in check.error
    assert token_check(json.dumps({"token": "gAAAA-t", "read": 206, "listed": 401}), "").token == "gAAAA-t"


def test_only_an_http_identity_endpoint_the_stack_does_not_allow_is_refused():
    strict = load_config(with_section(stack_config("dev"), "bootstrap", allowHttpIdentityEndpoint=None))
    assert plain_http_catalog_identity(strict, "https://keystone.example:5000/v3") is None
    refusal = plain_http_catalog_identity(strict, " HTTP://keystone.example:5000/v3")
    assert refusal is not None and refusal.startswith("ocp:bootstrap.allowHttpIdentityEndpoint: the service catalog's public identity endpoint")
    assert plain_http_auth_url(strict, "https://keystone.example:5000/v3", '"openstack" (clouds.yaml)') is None
    refusal = plain_http_auth_url(strict, "http://keystone.example:5000/v3", '"openstack" (clouds.yaml)')
    assert refusal is not None and 'the clouds.yaml entry "openstack" (clouds.yaml) has auth_url http://keystone.example:5000/v3' in refusal
    lab = load_config(stack_config("dev"))  # the committed dev stack: the local cloud
    assert plain_http_catalog_identity(lab, "http://127.0.0.1:5000/v3") is None and plain_http_auth_url(lab, "http://127.0.0.1:5000/v3", "") is None
    # No credential to send: userToken (its token still comes from auth_url) and the helper (no token at all).
    user_token = load_config(with_section(stack_config("dev"), "bootstrap", allowHttpIdentityEndpoint=None, credential="userToken"))
    assert plain_http_catalog_identity(user_token, "http://k:5000/v3") is None and plain_http_auth_url(user_token, "http://k:5000/v3", "")
    helper = load_config(with_section(stack_config("dev"), "bootstrap", allowHttpIdentityEndpoint=None, configSource="helper"))
    assert plain_http_catalog_identity(helper, "http://k:5000/v3") is None and plain_http_auth_url(helper, "http://k:5000/v3", "") is None


def test_the_credential_names_member_or_the_stack_stops_saying_so():
    assert member_role(["reader", "member", "admin"]) == "member" and member_role(["_member_", "Member"]) == "Member"
    assert member_role(["reader", "_member_"]) is None
    config = load_config(stack_config("dev"))
    assert member_role_problem(config, ["member", "reader"], "p1") is None
    problem = member_role_problem(config, ["reader", "_member_", "reader"], "p1")
    assert problem is not None and problem.startswith("ocp:bootstrap.credential: your token has roles _member_, reader in project p1, not `member`")
    assert member_role_problem(load_config(with_section(stack_config("dev"), "bootstrap", credential="userToken")), [], "p1") is None

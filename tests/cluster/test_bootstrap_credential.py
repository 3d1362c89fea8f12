"""cluster.bootstrap_credential and the http refusal, pure: the credential's expiry, what a token
check's answer becomes, which image endpoints the bootstrap may be sent to."""

from __future__ import annotations

import json

from cluster.bootstrap_credential import access_rule_path, expires_at, token_check
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

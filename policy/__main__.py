"""The pack's entry point: `pulumi preview --policy-pack policy/run` starts it (guard.py holds the rules)."""

from pulumi_policy import EnforcementLevel, PolicyPack

from guard import POLICIES

PolicyPack(name="ocp-guard-rails", enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)

"""The install driver: `python -m ocp install|approve-csrs|destroy --stack S` (Pulumi's Automation API)."""

"""A lab that runs a stack's on-node networking for real and measures its VIP failovers.

    python -m harness.lab --stack standalone [--shape compact|five-masters|all] [--scenario NAME] [--json]

It takes the stack's offline plan (tools.plan) and runs the very files each node gets, with
the host's keepalived and haproxy, one network namespace per node (harness.netns), plus
stand-ins for the cluster's API and routers and a client sending timed requests to the
VIPs. docs/lab.md says what each scenario measures and lists the figures.

Modules: nodes (plan -> nodes), keepalived (its config and log), standins (the stand-in
API and routers), client (the request loops), services (one node's processes), topology
(namespaces, holders), clock (waiting), scenarios, runner (one run, or several side by
side; clean-up), report.
"""

"""An OpenShift 4 cluster on OpenStack or libvirt: read the stack's config, build, export."""

import pulumi

from components.program import build_cluster, read_config

config, plan = read_config()
for key, value in build_cluster(config, plan).items():
    pulumi.export(key, value)

"""An OpenShift 4 cluster on OpenStack or libvirt: read the stack's config, build, export."""

from pathlib import Path

import pulumi

from components.program import build_cluster, read_config

# The stack file beside the program lists the keys set (components/config_source.py).
config, plan = read_config(Path(__file__).absolute().parent)
for key, value in build_cluster(config, plan).items():
    pulumi.export(key, value)

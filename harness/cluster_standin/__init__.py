"""A stand-in for what a live integrated cluster's controllers do to its OpenStack project.

A cluster installed by this program runs controllers that make resources Pulumi never
registered, and its destroy has to find them (cluster/cleanup.py). Where a deployed stack's
cluster can be played, the real cloud controller does its part (harness/ccm.py: the lifecycle's dev
stack). Nothing else boots in the local cloud, so no other controller runs there: this package does
what each does, through the same APIs, with the names, descriptions, tags and metadata its upstream
code gives (each module names the code it follows; facts only, read with the upstream source, never
copied):

- cloud_provider: load balancers of LoadBalancer Services under both naming schemes, a
  floating IP on each VIP port, and `lb-sg-*` groups on the member (node) ports, as the real
  controller makes them, for test_cleanup's made-up clusters, which have no Ignition config, API
  server or Nodes for the real one to start from;
- egressip: EgressIP reservation ports and the pair on a node's port;
- machine_api: a MachineSet's server on a trunk;
- cinder_csi: PVC volumes with snapshots;
- manila_csi: shares with snapshots, where the catalog has Manila.

It runs with the local cloud's virtualenv (openstacksdk), as the tenant, against a deployed
stack whose infra ID it is given, on the stack's own network or (--network) one the user gave it: `<venv>/bin/python -m harness.cluster_standin INFRA_ID` prints
what it made as JSON. Imports nothing of the project but itself.
"""

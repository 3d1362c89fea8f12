"""What Manila CSI (cloud-provider-openstack pkg/csi/manila) makes for a PVC and a VolumeSnapshot
where the cloud has Manila: CreateVolume makes a share named as the PV (`pvc-<uid>`) whose
metadata carries `manila.csi.openstack.org/cluster=<cluster id>` (controllerserver.go,
clusterMetadataKey; the installer sets the infra ID); CreateSnapshot (snapshot.go) makes a share
snapshot `snapshot-<uid>` with no metadata: it is known by its share.
"""

from __future__ import annotations

import uuid

CLUSTER_KEY = "manila.csi.openstack.org/cluster"


def share_with_snapshot(conn, infra: str) -> dict:
    share = conn.shared_file_system.create_share(name=f"pvc-{uuid.uuid4()}", share_proto="NFS", size=1, metadata={CLUSTER_KEY: infra})
    share = conn.shared_file_system.wait_for_status(share, "available", failures=["error"], interval=1, wait=300)
    snapshot = conn.shared_file_system.create_share_snapshot(share_id=share.id, name=f"snapshot-{uuid.uuid4()}")
    snapshot = conn.shared_file_system.wait_for_status(snapshot, "available", failures=["error"], interval=1, wait=300)
    return {"share": share.id, "share snapshot": snapshot.id}

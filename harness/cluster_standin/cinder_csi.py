"""What Cinder CSI (cloud-provider-openstack pkg/csi/cinder/controllerserver.go) makes for a
PVC and a VolumeSnapshot: CreateVolume names the volume as the PV (`pvc-<uid>`) with the metadata
`cinder.csi.openstack.org/cluster=<cluster id>` (cinderCSIClusterIDKey; the installer sets the
infra ID) and the PVC's name and namespace; CreateSnapshot names it `snapshot-<uid>` with the same
cluster key (not forced: the volume is available). ControllerPublishVolume then attaches the
volume to the node's server through Nova.
"""

from __future__ import annotations

import uuid

CLUSTER_KEY = "cinder.csi.openstack.org/cluster"


def volume_with_snapshot(conn, infra: str, server_id: str, namespace: str = "demo", claim: str = "data") -> dict:
    volume = conn.block_storage.create_volume(
        name=f"pvc-{uuid.uuid4()}",
        size=1,
        metadata={CLUSTER_KEY: infra, "csi.storage.k8s.io/pvc/name": claim, "csi.storage.k8s.io/pvc/namespace": namespace},
    )
    volume = conn.block_storage.wait_for_status(volume, "available", failures=["error"], interval=1, wait=300)
    snapshot = conn.block_storage.create_snapshot(volume_id=volume.id, name=f"snapshot-{uuid.uuid4()}", metadata={CLUSTER_KEY: infra})
    snapshot = conn.block_storage.wait_for_status(snapshot, "available", failures=["error"], interval=1, wait=300)
    conn.compute.create_volume_attachment(server_id, volume_id=volume.id)
    conn.block_storage.wait_for_status(conn.block_storage.get_volume(volume.id), "in-use", failures=["error"], interval=1, wait=300)
    return {"PVC volume": volume.id, "snapshot": snapshot.id}

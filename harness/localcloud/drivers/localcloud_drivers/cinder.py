"""A Cinder volume driver with no block device.

cinder's own FakeLoggingVolumeDriver keeps volumes as bookkeeping only, but inherits LVM's
image copies, which attach the volume on this host over iSCSI. Here they do nothing, so
`volume create --image` and boot from volume work.
"""

from cinder.tests.fake_driver import FakeLoggingVolumeDriver


class BookkeepingVolumeDriver(FakeLoggingVolumeDriver):
    def copy_image_to_volume(self, context, volume, image_service, image_id, disable_sparse=False):
        pass

    def copy_volume_to_image(self, context, volume, image_service, image_meta):
        pass

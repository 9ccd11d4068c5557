"""``tilesPerIPU`` 0 asks for every tile of the IPU, as ``acquireAvailableDevice(tilesPerIpu=0)`` does;
a negative count is still an error."""
import pytest

import popart
from workbench.popart.devices import TILES_PER_IPU


def test_zero_tiles_per_ipu_means_every_tile():
    model = popart.DeviceManager().createIpuModelDevice({"numIPUs": 4, "tilesPerIPU": 0})
    assert (model.numIpus, model.tilesPerIPU) == (4, TILES_PER_IPU)
    assert model.workbench_device().bytes_per_ipu == TILES_PER_IPU * 624 * 1024
    with popart.DeviceManager().acquireAvailableDevice(1, tilesPerIpu=0) as acquired:
        assert acquired.tilesPerIPU == TILES_PER_IPU


def test_negative_tiles_per_ipu_is_an_error():
    with pytest.raises(popart.popart_exception, match="must be positive"):
        popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": -1})

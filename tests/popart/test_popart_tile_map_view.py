"""The tile map per tile: ``session.tile_uses(ipu)`` and ``TileMapView`` drawing it."""
import numpy as np
import pytest

import popart
from workbench.widgets.tile_map_view import TileMapView


def _session(tiles=64, ipus=1):
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [32, 16]))
    w = builder.addInitializedInputTensor(np.ones((16, 8), np.float16).astype(np.float32), "w")
    m = builder.aiOnnx.matmul([x, w])
    h = builder.aiOnnx.cast([m], "FLOAT16")
    y = builder.aiOnnx.relu([h])
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": tiles,
                                                                                   "numIPUs": ipus}))
    return session, {x: 32 * 16 * 4, w: 16 * 8 * 4, m: 32 * 8 * 4, h: 32 * 8 * 2, y: 32 * 8 * 2}


def test_tile_uses_account_for_every_byte_of_every_tensor_once():
    session, sizes = _session()
    with pytest.raises(popart.popart_exception, match=r"Must call prepareDevice\(\) before tile_uses"):
        session.tile_uses()
    session.prepareDevice()
    uses = session.tile_uses(0)
    assert [use.tile for use in uses] == list(range(64))
    assert {name for use in uses for name in use.tensors} == set(sizes)
    for name, size in sizes.items():
        assert sum(use.tensors.get(name, 0) for use in uses) == size
    assert all(use.bytes == sum(use.tensors.values()) for use in uses)
    mapping = session.getTensorTileMap()  # the same placement as PopART's form of the map
    for name in sizes:
        held = {tile for tile, spans in enumerate(mapping[name]) if spans}
        assert held == {use.tile for use in uses if name in use.tensors}
    assert all(use.bytes == 0 for use in session.tile_uses(1))  # an IPU the session does not have


def test_tile_map_view_draws_a_bar_per_tile_with_its_tensors():
    session, sizes = _session(tiles=32)
    session.prepareDevice()
    view = TileMapView(session, live=False)
    bars = view.figure.data[0]
    assert list(bars.x) == list(range(32)) and sum(bars.y) == sum(sizes.values())
    busiest = int(np.argmax(bars.y))
    assert bars.hovertext[busiest].startswith(f"tile {busiest}: {bars.y[busiest]:,} B")
    assert "Tensors per tile, IPU 0" in view.figure.layout.title.text
    assert "TileMapView(IPU 0:" in repr(view) and "tile 0" in view.to_html(include_plotlyjs=False)
    with pytest.raises(TypeError, match="needs a popart InferenceSession or TrainingSession"):
        TileMapView(session.ir)

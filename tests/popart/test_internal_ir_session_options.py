"""The session options of ``ir._pb_ir`` carry the Ir's replication factor both ways, as popxl keeps it there."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops


def test_replication_options_set_the_factor_that_collectives_and_runs_use():
    ir = popxl.Ir()
    options = ir._pb_ir.getSessionOptions()
    options.enableReplicatedGraphs = True
    assert ir.replication_factor == 1  # enabled, but the count is still 1
    options.replicatedGraphCount = 2
    assert ir.replication_factor == 2
    with ir.main_graph:
        x = popxl.variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="x")
        scattered = ops.collectives.replicated_reduce_scatter(x)
        out = popxl.d2h_stream(scattered.shape, scattered.dtype, name="out")
        ops.host_store(out, scattered)
    assert scattered.shape == (3,)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()[out]
    # Both replicas hold the same x: the sum of the two copies, shard by shard.
    np.testing.assert_array_equal(result, 2 * np.arange(6, dtype=np.float32).reshape(2, 3))


def test_disabling_replication_leaves_one_replica_and_the_options_follow_the_ir():
    ir = popxl.Ir()
    options = ir._pb_ir.getSessionOptions()
    options.replicatedGraphCount = 4
    assert ir.replication_factor == 1  # PopART counts replicas only while replication is enabled
    options.enableReplicatedGraphs = True
    assert ir.replication_factor == 4
    options.enableReplicatedGraphs = False
    assert ir.replication_factor == 1
    ir.replication_factor = 8
    assert (options.enableReplicatedGraphs, options.replicatedGraphCount) == (True, 8)
    assert options.getGlobalReplicationFactor() == 8


def test_a_bad_count_is_refused_and_leaves_the_options_as_they_were():
    ir = popxl.Ir(replication=2)
    options = ir._pb_ir.getSessionOptions()
    with pytest.raises(ValueError, match="replication factor must be a positive int"):
        options.replicatedGraphCount = 0
    assert (options.replicatedGraphCount, ir.replication_factor) == (2, 2)

"""The PopART options of an Ir that is one instance of a popdist job (``ir._pb_ir.getSessionOptions()``) say the
job's replication and this instance's offset in it, as popxl's do; a single-process Ir's keep PopART's defaults."""
import popxl
from workbench.ir.popdist_settings import PopdistSettings


def test_the_options_of_an_instance_read_its_place_in_the_job():
    settings = PopdistSettings(num_instances=2, instance_index=1, num_total_replicas=4, num_local_replicas=2,
                               replica_index_offset=2, ipus_per_replica=1)
    ir = popxl.Ir(replication=settings)
    options = ir._pb_ir.getSessionOptions()
    assert options.enableDistributedReplicatedGraphs is True
    assert (options.globalReplicationFactor, options.globalReplicaOffset) == (4, 2)
    assert (options.enableReplicatedGraphs, options.replicatedGraphCount) == (True, 2)
    assert options.getGlobalReplicationFactor() == ir.replication_factor == 4
    assert ir.instance_replication_factor == 2


def test_a_single_process_ir_is_not_distributed():
    ir = popxl.Ir(replication=2)
    options = ir._pb_ir.getSessionOptions()
    assert options.enableDistributedReplicatedGraphs is False
    assert (options.globalReplicaOffset, options.replicatedGraphCount) == (0, 2)


def test_setting_the_distributed_options_makes_the_ir_an_instance_of_the_job():
    ir = popxl.Ir()
    ir.replication_factor = 2
    options = ir._pb_ir.getSessionOptions()
    options.enableDistributedReplicatedGraphs = True
    options.globalReplicaOffset = 4
    options.globalReplicationFactor = 8
    assert (ir.replication_factor, ir.instance_replication_factor) == (8, 2)
    assert list(ir.local_replicas) == [4, 5]
    assert options.getGlobalReplicationFactor() == 8 and options.replicatedGraphCount == 2
    with ir.main_graph:
        buffer = popxl.replica_sharded_buffer((4, 4), popxl.float32, shard_over=8)  # the job's replicas
    assert buffer.entries == 1
    options.enableDistributedReplicatedGraphs = False
    assert (ir.replication_factor, ir.instance_replication_factor) == (2, 2)

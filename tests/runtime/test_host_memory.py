"""A session whose copies of the weights do not fit the host memory fails at once, with a
``HostMemoryError`` naming what it needs, what is available and what to do, before it allocates them:
not a bare NumPy ``MemoryError`` from inside ``Session(...)``, nor the out-of-memory killer."""
import subprocess
import sys
import textwrap
from contextlib import contextmanager

import numpy as np
import popxl
import popxl.ops as ops
import pytest
from workbench.runtime import HostMemoryError, RunOptions
from workbench.runtime.options import default_run_options, set_default_run_options
from workbench.runtime.state.host_memory import available_host_memory, weight_copies

import popart

REPLICAS, ELEMENTS = 8, 50_000  # a weight of 200 kB on each of 8 replicas


def per_replica_ir(sharded: bool = False):
    """A weight that each replica updates with its own gradient (no all-reduce), so every replica
    keeps its own copy; or, ``sharded``, a remote replica-sharded weight (each replica one shard)."""
    ir = popxl.Ir(replication=REPLICAS)
    with ir.main_graph:
        x = popxl.h2d_stream([ELEMENTS], popxl.float32, name="x")
        data = np.zeros(ELEMENTS, np.float32)
        if sharded:
            buffer = popxl.remote_buffer((ELEMENTS // REPLICAS,), popxl.float32, 1)
            w = popxl.remote_replica_sharded_variable(data, buffer, 0, name="w")
            shard = ops.remote_load(buffer, 0)
            ops.remote_store(buffer, 0, shard + 1.0)
        else:
            w = popxl.variable(data, name="w")
            ops.var_updates.accumulate_(w, ops.host_load(x))
    return ir, w


def options(**changes) -> RunOptions:
    return default_run_options().with_changes(replicas="turns", **changes)


def allocated(session) -> int:
    """The bytes of the distinct arrays a session holds for the replicas and the host copy."""
    executable = session.executable
    arrays = {id(a): a for values in executable.device_values for a in values.values()}
    arrays.update({id(a): a for buffers in executable.buffers for a in buffers.values()})
    device = sum(a.nbytes for a in arrays.values() if a.base is None or id(a.base) not in arrays)
    return device + sum(a.nbytes for a in session._host.values())


def test_the_bytes_checked_are_the_bytes_a_session_allocates():
    for ir, _ in (per_replica_ir(), per_replica_ir(sharded=True)):
        copies = weight_copies(ir, set())
        with popxl.Session(ir, "ipu_model", options=options()) as session:
            assert copies.total == allocated(session)
    assert weight_copies(per_replica_ir()[0], set()).device == REPLICAS * ELEMENTS * 4
    assert weight_copies(per_replica_ir(sharded=True)[0], set()).device == ELEMENTS * 4


def test_a_session_over_the_limit_names_both_numbers_and_what_to_do():
    ir, _ = per_replica_ir()
    needed = (REPLICAS + 1) * ELEMENTS * 4  # every replica's copy and the host copy
    with pytest.raises(HostMemoryError) as raised:
        popxl.Session(ir, "ipu_model", options=options(host_memory_limit=needed - 1))
    error = raised.value
    assert isinstance(error, MemoryError) and (error.needed, error.available) == (needed, needed - 1)
    message = str(error)
    assert f"needs 1.7 MiB ({needed:,} bytes)" in message
    assert f"1.7 MiB ({needed - 1:,} bytes) is available (RunOptions.host_memory_limit)" in message
    assert "8 replicas' variables" in message and "fewer replicas" in message and "replica-sharded" in message
    # Nothing was taken: the same Ir makes a session at once where the memory is there.
    with popxl.Session(ir, "ipu_model", options=options(host_memory_limit=needed)) as session:
        session.run({next(iter(ir.get_all_h2d_streams())): np.ones((REPLICAS, ELEMENTS), np.float32)})
        np.testing.assert_array_equal(session.get_tensor_data(ir.variables[0]), np.ones(ELEMENTS))


def test_the_advice_holds_shared_and_sharded_weights_fit_where_copies_do_not():
    ir, _ = per_replica_ir(sharded=True)
    limit = 3 * ELEMENTS * 4
    with popxl.Session(ir, "ipu_model", options=options(host_memory_limit=limit)):
        pass
    with pytest.raises(HostMemoryError):
        popxl.Session(per_replica_ir()[0], "ipu_model", options=options(host_memory_limit=limit))
    # A weight every replica updates alike is kept once (shared weights), unless sharing is off.
    shared = popxl.Ir(replication=REPLICAS)
    with shared.main_graph:
        w = popxl.variable(np.zeros(ELEMENTS, np.float32), name="w")
        ops.var_updates.accumulate_(w, ops.collectives.replicated_all_reduce(w * 0.0 + 1.0))
    with popxl.Session(shared, "ipu_model", options=options(host_memory_limit=limit)):
        pass
    with pytest.raises(HostMemoryError):
        popxl.Session(shared, "ipu_model", options=options(host_memory_limit=limit, shared_weights=False))


@pytest.mark.parametrize("limit", [-1, 1.5, True, "1GB"])
def test_the_limit_must_be_a_number_of_bytes(limit):
    with pytest.raises(ValueError, match="host_memory_limit must be a number of bytes"):
        RunOptions(host_memory_limit=limit)


def test_what_is_available_is_the_tightest_limit_found():
    machine = available_host_memory()
    assert machine is not None and machine.available > 0  # Linux: MemAvailable at least
    assert available_host_memory(limit=12345).available == min(12345, machine.available)
    assert available_host_memory(limit=machine.available * 2).available <= machine.available


@contextmanager
def default_limit(limit: int):
    """Sessions made meanwhile without options (a PopART session's) have ``limit``."""
    previous = set_default_run_options(default_run_options().with_changes(host_memory_limit=limit,
                                                                         shared_weights=False))
    try:
        yield
    finally:
        set_default_run_options(previous)


def test_a_popart_session_checks_before_preparing_its_device():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [ELEMENTS]))
    w = builder.addInitializedInputTensor(np.zeros(ELEMENTS, np.float32), "w")
    y = builder.aiOnnx.add([x, w])
    opts = popart.SessionOptions()
    opts.enableReplicatedGraphs, opts.replicatedGraphCount, opts.constantWeights = True, REPLICAS, False
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createIpuModelDevice({"numIPUs": REPLICAS}),
                                      userOptions=opts)
    with default_limit(ELEMENTS * 4 * 2), pytest.raises(HostMemoryError, match="8 replicas' variables"):
        session.prepareDevice()


RLIMITED = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import popxl
    import popxl.ops as ops
    from workbench.runtime import HostMemoryError, RunOptions

    ir = popxl.Ir(replication=16)
    with ir.main_graph:  # 16 replicas of a 64 MB weight, each updated with its own data: 1.1 GB in all
        x = popxl.h2d_stream([16 << 20], popxl.float32, name="x")
        w = popxl.variable(np.zeros(16 << 20, np.float32), name="w")
        ops.var_updates.accumulate_(w, ops.host_load(x))
    with open("/proc/self/status") as status:
        used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (used + (400 << 20), resource.RLIM_INFINITY))
    try:
        popxl.Session(ir, "ipu_model", options=RunOptions(replicas="turns"))
    except HostMemoryError as error:
        print(error)
        sys.exit(0)
    sys.exit(3)
""")


def test_a_process_with_an_address_space_limit_gets_the_clear_error_not_numpys():
    done = subprocess.run([sys.executable, "-c", RLIMITED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not enough host memory for this session: it needs 1.1 GiB" in done.stdout
    assert "the process's RLIMIT_AS of" in done.stdout and "Use fewer replicas" in done.stdout

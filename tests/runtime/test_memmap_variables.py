"""Variables made from an np.memmap: read and written in place, flushed to their file by weights_to_host,
for on-chip, remote and replica-sharded variables alike, and refused in popxl's words when they would need a copy."""
import logging

import numpy as np
import pytest

import popxl
import popxl.ops as ops


def mapped(tmp_path, values, dtype=np.float32, name="w.bin", order="C"):
    array = np.memmap(str(tmp_path / name), dtype=dtype, mode="w+", shape=np.shape(values), order=order)
    array[...] = values
    array.flush()
    return array


def count_flushes(array: np.memmap) -> list:
    calls = []
    flush = array.flush

    def counted(*args, **kwargs):
        calls.append(1)
        return flush(*args, **kwargs)

    array.flush = counted
    return calls


def test_weights_to_host_writes_an_updated_variable_into_its_memmap_and_flushes_it(tmp_path):
    start = np.arange(6, dtype=np.float32).reshape(2, 3)
    data = mapped(tmp_path, start)
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(data, name="w")
        ops.var_updates.accumulate_(w, popxl.constant(np.full((2, 3), 0.5, np.float32)))
    flushes = count_flushes(data)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        session.weights_to_host()
        assert flushes, "weights_to_host did not flush the memmap"
        assert session.get_tensor_data(w) is data
    np.testing.assert_array_equal(np.fromfile(str(tmp_path / "w.bin"), np.float32).reshape(2, 3), start + 0.5)


def test_a_replica_sharded_variable_made_from_a_memmap_is_written_back_into_it(tmp_path):
    start = np.arange(8, dtype=np.float32)
    data = mapped(tmp_path, start)
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        w, shard = popxl.replica_sharded_variable(data, name="w")
        ops.var_updates.accumulate_(shard, popxl.constant(np.ones(4, np.float32)))
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
    # the session wrote the device values back on exit, into the same mapped array
    np.testing.assert_array_equal(data, start + 1)
    np.testing.assert_array_equal(np.fromfile(str(tmp_path / "w.bin"), np.float32), start + 1)


def test_a_memmap_of_another_dtype_than_asked_is_refused_in_popxls_words(tmp_path):
    data = mapped(tmp_path, np.ones((2, 2)), dtype=np.float16)
    with popxl.Ir().main_graph:
        with pytest.raises(ValueError, match="^When passing a memory-mapped NumPy array, the `dtype` parameter must "
                                             "be None or the same as the array's dtype"):
            popxl.variable(data, popxl.float32)


def test_a_memmap_that_is_not_c_ordered_is_refused_in_popxls_words(tmp_path):
    data = mapped(tmp_path, np.ones((2, 3), np.float32), order="F")
    with popxl.Ir().main_graph:
        with pytest.raises(ValueError, match="^When passing a memory-mapped NumPy array, it must already be in "
                                             "C-ordered and aligned form"):
            popxl.variable(data)


def test_a_memmap_that_needs_downcasting_is_refused_and_names_the_dtype_to_map(tmp_path):
    data = mapped(tmp_path, np.ones(4), dtype=np.float64)
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        with pytest.raises(ValueError, match="the dtype None is not supported, as it requires downcasting the array's float64.*"
                                             "map the file with dtype float32"):
            popxl.replica_sharded_variable(data, name="w")
        assert not list(ir.main_graph.variables)  # nothing was made


def test_a_memmap_with_a_non_const_grouping_is_copied_with_a_warning(tmp_path):
    ir = popxl.Ir(replication=4)
    grouping = ir.replica_grouping_from_assignments([0, 1, 1, 0])
    data = mapped(tmp_path, [[1.0, 2.0], [3.0, 4.0]])
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("popart").addHandler(handler)
    try:
        with ir.main_graph:
            w = popxl.variable(data, name="w", replica_grouping=grouping)
            ops.var_updates.accumulate_(w, popxl.constant(np.ones(2, np.float32)))
    finally:
        logging.getLogger("popart").removeHandler(handler)
    (record,) = [r for r in records if "non-const replica grouping" in r.getMessage()]
    assert "'w'" in record.getMessage() and "you have passed np.memmap data" in record.getMessage()
    assert not isinstance(w.host_data, np.memmap)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(w), [[2.0, 3.0], [4.0, 5.0]])
    np.testing.assert_array_equal(np.fromfile(tmp_path / "w.bin", np.float32), [1.0, 2.0, 3.0, 4.0])  # file untouched

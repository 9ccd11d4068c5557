"""Long runs show progress: a bar once a run has lasted about a second, counting the iterations of
the main graph's repeat loops; short runs draw nothing; ``session.progress = False`` turns it off."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from support.strategies import default_progress
from workbench.runtime import ProgressOptions, RunOptions, default_run_options


class RecordedBar:
    """Stands in for tqdm's bar and remembers what it was shown."""

    made: list = []

    def __init__(self, total, desc, seconds_ago):
        self.total, self.desc, self.seconds_ago = total, desc, seconds_ago
        self.n, self.seen, self.closed = 0, [], False
        RecordedBar.made.append(self)

    def refresh(self):
        self.seen.append(self.n)

    def close(self):
        self.closed = True


@pytest.fixture
def bars():
    """Every bar made, drawn as soon as a run starts."""
    RecordedBar.made = []
    with default_progress(ProgressOptions(delay_seconds=0.0, refresh_seconds=0.0, bar=RecordedBar)):
        yield RecordedBar.made


def counting_ir(iterations: int, replication: int = 1) -> tuple:
    """A loop adding 1 to a variable ``iterations`` times per run."""
    ir = popxl.Ir(replication=replication)
    with ir.main_graph:
        counter = popxl.variable(np.zeros((), np.float32), name="counter")
        body = ir.create_graph(lambda x: x + 1, counter.spec)
        (total,) = ops.repeat(body, iterations, counter)
        ops.var_updates.copy_var_update_(counter, total)
    return ir, counter


@pytest.mark.parametrize("replication", [1, 2])
def test_a_long_run_shows_a_bar_that_ends_at_the_loops_iteration_count(bars, replication):
    ir, counter = counting_ir(50, replication)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        session.run()
    assert [bar.total for bar in bars] == [50, 50]
    assert [bar.desc for bar in bars] == ["run 1", "run 2"]
    assert all(bar.closed and bar.n == 50 for bar in bars)
    assert session.get_tensor_data(counter) == 100


def test_the_bar_advances_during_a_run_of_one_replica(bars):
    ir, _ = counting_ir(30)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
    (bar,) = bars
    assert bar.seen == sorted(bar.seen) and len(set(bar.seen)) > 1


def test_short_runs_draw_nothing():
    made = []
    ir, _ = counting_ir(5)
    with popxl.Session(ir, "ipu_model", options=default_run_options().with_changes(
            progress=ProgressOptions(bar=lambda **kwargs: made.append(kwargs)))) as session:
        session.run()
    assert made == []


def test_progress_can_be_switched_off_per_session(bars):
    ir, _ = counting_ir(20, replication=2)
    with popxl.Session(ir, "ipu_model") as session:
        session.progress = False
        session.run()
        assert bars == []
        session.progress = True
        session.run()
    assert len(bars) == 1


def test_progress_must_be_a_bool():
    ir, _ = counting_ir(2)
    session = popxl.Session(ir, "ipu_model")
    with pytest.raises(TypeError, match="Session.progress must be True or False, got 'no'"):
        session.progress = "no"
    assert session.progress is True


def test_a_program_without_loops_shows_a_bar_without_a_total(bars):
    ir = popxl.Ir()
    with ir.main_graph:
        ops.sin(popxl.variable(np.ones(3, np.float32)))
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
    assert [bar.total for bar in bars] == [None]


def test_a_failed_run_closes_its_bar_where_it_got_to(bars):
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([2], popxl.float32, name="x")
        body = ir.create_graph(lambda x: ops.host_load(x_stream) + x, popxl.TensorSpec((2,), popxl.float32))
        ops.repeat(body, 4, popxl.variable(np.zeros(2, np.float32)))
    with popxl.Session(ir, "ipu_model") as session:
        session.run({x_stream: np.ones(2, np.float32)})
    assert bars[0].closed and bars[0].n == 4


def test_the_stepper_shows_progress_while_it_continues_over_a_loop(bars):
    ir, counter = counting_ir(40, replication=2)
    with popxl.Session(ir, "ipu_model") as session:
        stepper = session.stepper()
        stop = stepper.continue_()
        assert stop.finished
    (bar,) = bars
    assert bar.desc == "continue" and bar.n == 40 and bar.closed


def test_in_a_terminal_the_bar_is_a_line_on_stderr(capsys):
    ir, _ = counting_ir(25)
    with popxl.Session(ir, "ipu_model", options=RunOptions(progress=ProgressOptions(delay_seconds=0.0))) as session:
        session.run()
    err = capsys.readouterr().err
    assert "run 1: 100%" in err and "25/25" in err

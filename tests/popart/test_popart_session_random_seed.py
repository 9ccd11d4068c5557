"""Session.setRandomSeed seeds the random ops without a seed attribute: one seed gives one sequence in
every session (setting it again starts the sequence over), another seed another; as in PopART, a
node's own seed attribute is refused. The seed moves on with each run, as read by getRandomSeed."""
import numpy as np
import pytest

import popart


def session_of(**attributes):
    builder = popart.Builder()
    out = builder.aiOnnx.randomuniform(shape=[64], **attributes)
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, {out: popart.AnchorReturnType("All")}),
        deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    return session, out


def draw(session, out):
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({}, anchors))
    return anchors[out].copy()


def seeded_draw(session_seed, **attributes):
    session, out = session_of(**attributes)
    session.setRandomSeed(session_seed)
    return draw(session, out)


def test_the_same_seed_repeats_values_and_another_seed_changes_them():
    first = seeded_draw(3)
    np.testing.assert_array_equal(first, seeded_draw(3))
    assert not np.array_equal(first, seeded_draw(4))
    assert first.min() >= 0.0 and first.max() < 1.0


def test_setting_the_seed_again_starts_the_sequence_over():
    session, out = session_of()
    session.setRandomSeed(5)
    first, second = draw(session, out), draw(session, out)
    assert not np.array_equal(first, second)
    session.setRandomSeed(5)
    np.testing.assert_array_equal(draw(session, out), first)


def test_a_seed_attribute_is_refused_in_favour_of_the_session_seed():
    with pytest.raises(popart.popart_exception,
                       match="Optional seed attribute is not supported. Use session::setRandomSeed instead.$"):
        session_of(seed=9.0)


def test_the_seed_read_after_a_run_gives_another_session_the_next_runs_values():
    first, first_out = session_of()
    first.setRandomSeed(7)
    draw(first, first_out)
    seed = first.getRandomSeed()
    assert seed != 7
    following = draw(first, first_out)
    second, out = session_of()
    second.setRandomSeed(seed)
    np.testing.assert_array_equal(draw(second, out), following)

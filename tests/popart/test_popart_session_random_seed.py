"""Session.setRandomSeed seeds the random ops without a seed attribute: one seed gives one sequence in
every session (setting it again starts the sequence over), another seed another; a node's own seed
attribute keeps its values whatever the session's seed. The seed moves on with each run, as read by
getRandomSeed."""
import numpy as np

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


def test_a_seed_attribute_wins_over_the_session_seed():
    np.testing.assert_array_equal(seeded_draw(3, seed=9.0), seeded_draw(4, seed=9.0))


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

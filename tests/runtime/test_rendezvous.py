"""The bookkeeping that every way of waiting shares (``MeetingBook``): who gave what at which meeting,
who waits where, and the two rules that say replicas cannot meet, each with one wording."""
import pytest

from workbench.runtime.replication.communicator import Communicator
from workbench.runtime.replication.rendezvous import (CollectiveMismatchError, MeetingBook, MeetingKey, Waiting,
                                                      deadlock_error, gone_error)
from workbench.runtime.replication.turns import TurnTakingCommunicator


def test_a_meeting_fills_as_its_members_arrive_and_is_forgotten_when_the_last_leaves():
    book = MeetingBook()
    key = MeetingKey(None, (0, 1), 0)
    meeting = book.give(key, 0, (0, 1), "a")
    assert not book.full(key, (0, 1))
    assert book.give(key, 1, (0, 1), "b") is meeting and book.full(key, (0, 1))
    assert meeting.values == {0: "a", 1: "b"}
    assert not book.leave(key, meeting) and book.leave(key, meeting)
    assert key not in book.meetings


def test_the_rules_that_say_replicas_cannot_meet():
    book = MeetingBook()
    first, second = MeetingKey(None, (0, 1), 0), MeetingKey(None, (0, 1), 1)
    book.give(first, 0, (0, 1), "x")
    book.waiting[0] = Waiting(first, "op A", (0, 1))
    assert book.gone(first, (0, 1), finished={1}) == [1]
    assert not book.all_stuck([0, 1])  # replica 1 still runs
    book.give(second, 1, (0, 1), "y")
    book.waiting[1] = Waiting(second, "op B", (0, 1))
    assert book.all_stuck([0, 1])
    assert str(deadlock_error(book.where())) == ("the replicas reached different collectives and wait on each "
                                                 "other: replica 0 at op A; replica 1 at op B")
    assert str(gone_error(0, "op A", [1])) == ("replica 0 waits at op A for replica(s) [1], which finished the "
                                               "run without reaching it: every replica of a group must run the "
                                               "same collectives")


@pytest.mark.parametrize("make", [Communicator, TurnTakingCommunicator], ids=["threads", "turns"])
def test_replicas_that_reach_different_collectives_are_told_so_in_one_wording(make):
    rendezvous = make([0, 1])
    errors = []

    def replica(index, label):
        def run():
            try:
                rendezvous.exchange(MeetingKey(None, (0, 1), index), label, index, [0, 1], index)
            except CollectiveMismatchError as error:
                errors.append(str(error))
            if isinstance(rendezvous, Communicator):
                rendezvous.finished(index)
        return run
    works = [replica(0, "op A"), replica(1, "op B")]
    if isinstance(rendezvous, TurnTakingCommunicator):
        with pytest.raises(CollectiveMismatchError, match="wait on each other: replica 0 at op A; replica 1 at op B"):
            rendezvous.take_turns(works)
    else:
        import threading

        threads = [threading.Thread(target=work) for work in works]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert errors and all("reached different collectives and wait on each other" in e for e in errors)

"""The share consumer's acknowledgement bookkeeping (sans-IO): wire batches, explicit-mode rules, implicit
acceptance, gaps."""

from __future__ import annotations

import pytest

from pykafka_client import AcknowledgeType, TopicPartition
from pykafka_client.consumer.share_acknowledgements import GAP, ShareAcknowledgements, acknowledgement_batches
from pykafka_client.errors import IllegalStateError

TP = TopicPartition("t", 0)
A, R, J = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


def test_consecutive_offsets_acknowledged_alike_form_one_batch() -> None:
    assert acknowledgement_batches({0: 1, 1: 1, 2: 2, 3: 1, 5: 1, 6: 0}) == [
        (0, 1, 1), (2, 2, 2), (3, 3, 1), (5, 5, 1), (6, 6, 0)]
    assert acknowledgement_batches({}) == []


def test_explicit_mode_sends_what_was_acknowledged_and_refuses_the_rest() -> None:
    acks = ShareAcknowledgements(explicit=True)
    acks.delivered(TP, [10, 11, 12])
    acks.acknowledge(TP, 10, A)
    acks.acknowledge(TP, 11, R)
    with pytest.raises(IllegalStateError, match="1 records of the previous poll are unacknowledged"):
        acks.check_all_acknowledged()
    with pytest.raises(IllegalStateError, match="not held"):
        acks.acknowledge(TP, 10, A)  # twice
    acks.acknowledge(TP, 12, J)
    acks.check_all_acknowledged()
    assert acks.drain() == {TP: [(10, 10, 1), (11, 11, 2), (12, 12, 3)]}
    assert not acks.has_pending()


def test_implicit_mode_accepts_everything_held_and_refuses_acknowledge() -> None:
    acks = ShareAcknowledgements(explicit=False)
    acks.delivered(TP, [0, 1, 2])
    with pytest.raises(IllegalStateError, match=r"share\.acknowledgement\.mode=explicit"):
        acks.acknowledge(TP, 0, A)
    acks.check_all_acknowledged()  # no rule in implicit mode
    acks.settle_held(A)
    acks.gaps(TP, [3])
    assert acks.held_count() == 0
    assert acks.drain() == {TP: [(0, 2, 1), (3, 3, GAP)]}

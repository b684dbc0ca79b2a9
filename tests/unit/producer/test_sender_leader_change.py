"""The producer across a partition leader change (issue 16, item 5): NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH and LEADER_NOT_AVAILABLE ask for metadata; KIP-951 hints (current leader + node
endpoints in the ProduceResponse) move the batch to the new leader at once, but only when their epoch is
newer than the cached one; retries stay within ``delivery.timeout.ms``; an idempotent producer keeps the
per-partition order when its in-flight batches move to the new leader. Driven with MockClient + MockTime."""

from __future__ import annotations

import pytest

from pykafka_client.errors import KafkaTimeoutError
from pykafka_client.protocol.messages import ProduceRequest
from tests.doubles.mock_client import body_as
from tests.doubles.responses import metadata_response
from tests.unit.producer.sender_harness import PID, TOPIC, TP0, Harness, batches_in, is_produce, produce_response

NONE = 0
LEADER_NOT_AVAILABLE = 5
NOT_LEADER = 6
FENCED_LEADER_EPOCH = 74


@pytest.mark.parametrize("code", [NOT_LEADER, FENCED_LEADER_EPOCH])
def test_leader_change_error_with_newer_hint_retries_on_the_new_leader_without_backoff(code: int) -> None:
    h = Harness(retry_backoff_ms=10_000, retry_backoff_max_ms=10_000)
    (f,) = h.append()
    h.run_once()
    assert h.client.sent[-1].destination == "0"
    h.client.respond(produce_response({TP0: (code, -1)}, current_leader={TP0: (1, 3)}, node_endpoints=[h.node1]))
    h.run_once()
    leader, epoch = h.metadata.leader_and_epoch(TP0)
    assert leader == h.node1 and epoch == 3
    assert h.metadata.current_leader(TP0).epoch == 3
    h.client.prepare_response(produce_response({TP0: (NONE, 40)}), is_produce, node=h.node1)
    h.run_until(f.done)  # no 10 s backoff: the leader changed
    assert h.client.sent[-1].destination == "1"
    assert f.result(0).offset == 40


def test_hint_with_an_epoch_not_newer_than_the_cached_one_is_ignored() -> None:
    h = Harness()
    h.metadata.update(
        0, metadata_response(h.brokers, {TOPIC: 2}, leaders={(TOPIC, 0): 0, (TOPIC, 1): 0}, leader_epoch=4), False,
        h.time.hi_res_clock_ms(),
    )
    (f,) = h.append()
    h.run_once()
    # A broker that lags behind names node 1 at epoch 4 (= cached): not applied; a refresh is asked for instead.
    h.client.respond(produce_response({TP0: (NOT_LEADER, -1)}, current_leader={TP0: (1, 4)}, node_endpoints=[h.node1]))
    h.run_once()
    leader, epoch = h.metadata.leader_and_epoch(TP0)
    assert leader == h.node0 and epoch == 4
    assert h.metadata.update_requested()
    assert not f.done()
    assert h.accumulator.batches_for(TP0)[0].attempts == 1


def test_hint_naming_an_unknown_node_without_endpoint_is_ignored() -> None:
    h = Harness()
    (f,) = h.append()
    h.run_once()
    h.client.respond(produce_response({TP0: (NOT_LEADER, -1)}, current_leader={TP0: (7, 9)}))
    h.run_once()
    leader, epoch = h.metadata.leader_and_epoch(TP0)
    assert leader == h.node0 and epoch == 0
    assert h.metadata.update_requested() and not f.done()


def test_leader_not_available_requests_metadata_and_retries_after_the_refresh() -> None:
    h = Harness()
    (f,) = h.append()
    h.run_once()
    h.client.respond(produce_response({TP0: (LEADER_NOT_AVAILABLE, -1)}))
    h.run_once()
    assert h.metadata.update_requested() and not f.done()
    # The refresh names node 1 at a newer epoch: the retry goes there.
    h.metadata.update(
        0, metadata_response(h.brokers, {TOPIC: 2}, leaders={(TOPIC, 0): 1, (TOPIC, 1): 0}, leader_epoch=1), False,
        h.time.hi_res_clock_ms(),
    )
    h.client.prepare_response(produce_response({TP0: (NONE, 5)}), is_produce, node=h.node1)
    h.run_until(f.done)
    assert h.client.sent[-1].destination == "1"
    assert f.result(0).offset == 5


def test_batch_whose_leader_stays_unknown_expires_at_the_delivery_timeout() -> None:
    h = Harness(delivery_timeout_ms=5_000, request_timeout_ms=2_000)
    (f,) = h.append()
    h.run_once()
    h.client.respond(produce_response({TP0: (NOT_LEADER, -1)}))
    h.run_once()
    # The election is still running: metadata has no leader for the partition.
    h.metadata.update(
        0, metadata_response(h.brokers, {TOPIC: 2}, leaders={(TOPIC, 0): -1, (TOPIC, 1): 0}, leader_epoch=1), False,
        h.time.hi_res_clock_ms(),
    )
    sent = len(h.client.sent)
    for _ in range(5):
        h.time.sleep(1_000)
        h.run_once()
    assert len(h.client.sent) == sent  # nowhere to send it
    assert f.done()
    with pytest.raises(KafkaTimeoutError, match="Expiring 1 record"):
        f.result(0)


def test_idempotent_in_flight_batches_move_to_the_new_leader_in_sequence_order() -> None:
    h = Harness(idempotent=True, retry_backoff_ms=10_000, retry_backoff_max_ms=10_000)
    assert h.tm is not None
    f1 = h.append(n=1)
    h.run_once()
    f2 = h.append(n=1)
    h.run_once()
    f3 = h.append(n=1)
    h.run_once()
    assert [batches_in(r.body)[TP0].base_sequence for r in h.client.sent if is_produce(r.body)] == [0, 1, 2]
    for _ in range(3):
        h.client.respond(
            produce_response({TP0: (NOT_LEADER, -1)}, current_leader={TP0: (1, 2)}, node_endpoints=[h.node1])
        )
    h.run_once()
    assert [b.base_sequence for b in h.accumulator.batches_for(TP0)] == [0, 1, 2]
    for expected_seq, base_offset in ((0, 100), (1, 101), (2, 102)):
        h.run_until(lambda: len(h.client.requests) == 1)
        request = h.client.requests[0]
        assert request.destination == "1"
        assert batches_in(body_as(request, ProduceRequest))[TP0].base_sequence == expected_seq
        for _ in range(2):
            h.run_once()
        assert len(h.client.requests) == 1  # one at a time while retried batches resolve
        h.client.respond(produce_response({TP0: (NONE, base_offset)}))
        h.run_once()
    assert [f[0].result(0).offset for f in (f1, f2, f3)] == [100, 101, 102]
    assert h.tm.last_acked_sequence(TP0) == 2
    assert h.tm.producer_id_and_epoch() == (PID, 0)  # no epoch bump: nothing was lost

"""Contract statements 61-74 (SenderTest / TransactionManagerTest), driven step by step with run_once()."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pykafka_client.errors import (
    ClusterAuthorizationFailedError,
    InvalidRecordError,
    KafkaTimeoutError,
    NetworkError,
    NotLeaderOrFollowerError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.producer.producer_batch import ProducerBatch
from pykafka_client.producer.producer_metadata import MetadataSnapshot
from pykafka_client.producer.record_accumulator import AccumulatorMetadata, ReadyCheckResult
from pykafka_client.producer.transaction_manager import State
from pykafka_client.protocol.messages import InitProducerIdRequest, ProduceRequest
from pykafka_client.structs import Node
from tests.unit.producer.sender_harness import (
    MAX_INT,
    PID,
    TP0,
    TP1,
    Harness,
    batches_in,
    init_pid_response,
    is_produce,
    produce_response,
)

NONE = 0
NOT_LEADER = 6
MESSAGE_TOO_LARGE = 10
CLUSTER_AUTH = 31
OUT_OF_ORDER = 45
DUPLICATE_SEQ = 46
UNKNOWN_PRODUCER_ID = 59
INVALID_RECORD = 87


def test_simple_send_completes_future() -> None:
    h = Harness()
    (f,) = h.append()
    h.run_once()  # connect + send
    assert len(h.produce_requests()) == 1
    h.client.respond(produce_response({TP0: (NONE, 42)}))
    h.run_once()
    md = f.result(0)
    assert (md.topic, md.partition, md.offset) == ("t", 0, 42)
    assert h.accumulator.free.available_memory() == h.accumulator.free.total_memory


def test_s61_not_leader_without_hint_reenqueues_and_requests_metadata() -> None:
    h = Harness()
    (f,) = h.append()
    h.run_once()
    h.client.respond(produce_response({TP0: (NOT_LEADER, -1)}))
    h.run_once()
    assert not f.done()
    assert h.accumulator.batches_for(TP0)[0].attempts == 1
    assert h.metadata.update_requested()


def test_s61_not_leader_with_new_leader_hint_updates_metadata_at_once() -> None:
    h = Harness(retry_backoff_ms=1000, retry_backoff_max_ms=1000)
    (f,) = h.append()
    h.run_once()
    h.client.respond(
        produce_response({TP0: (NOT_LEADER, -1)}, current_leader={TP0: (1, 5)}, node_endpoints=[h.node1])
    )
    h.run_once()  # handles the response, applies the hint
    leader, epoch = h.metadata.leader_and_epoch(TP0)
    assert leader is not None and leader.id == 1 and epoch == 5
    # The leader changed, so the retry skips the 1 s backoff and goes to node 1 at once.
    h.client.prepare_response(produce_response({TP0: (NONE, 7)}), is_produce, node=h.node1)
    h.run_until(f.done)
    assert h.client.sent[-1].destination == "1"
    assert f.result(0).offset == 7


def test_s62_disconnect_retried_until_retries_exhausted() -> None:
    h = Harness(retries=1)
    (f,) = h.append()
    h.run_once()
    h.client.disconnect("0")
    h.run_once()  # response: NETWORK_EXCEPTION, retried (1 of 1)
    assert not f.done()
    h.time.sleep(100)
    h.run_until(lambda: len(h.produce_requests()) == 2)
    h.client.disconnect("0")
    h.run_until(f.done)
    assert isinstance(f.exception(0), NetworkError)


def test_s63_in_flight_batch_expires_and_late_retriable_response_does_not_retry() -> None:
    h = Harness(delivery_timeout_ms=1500, request_timeout_ms=5000, linger_ms=0)
    (f,) = h.append()
    h.run_once()
    assert len(h.produce_requests()) == 1
    h.time.sleep(1500)
    h.run_once()
    assert isinstance(f.exception(0), KafkaTimeoutError)
    # A late retriable answer must not resurrect the batch.
    h.client.respond(produce_response({TP0: (NOT_LEADER, -1)}))
    h.run_once()
    h.time.sleep(200)
    h.run_once()
    assert len(h.produce_requests()) == 1
    assert not h.accumulator.has_undrained()


def test_the_next_batch_expiry_is_the_earliest_of_in_flight_and_queued_batches() -> None:
    h = Harness(delivery_timeout_ms=1500, request_timeout_ms=5000, linger_ms=0)
    start = h.time.hi_res_clock_ms()
    h.append()
    h.run_once()  # sent: in flight
    assert len(h.produce_requests()) == 1
    assert h.accumulator.next_expiry_time_ms() == start + 1500
    h.time.sleep(400)
    h.client.backoff(h.node0, 10_000)
    h.append(tp=TP1)
    h.run_once()  # queued (the node backs off); the in-flight batch expires first
    assert h.accumulator.next_expiry_time_ms() == start + 1500
    h.client.respond(produce_response({TP0: (NONE, 0)}))
    h.run_once()  # the in-flight batch completed: the queued batch's expiry is the next
    h.run_once()
    assert h.accumulator.next_expiry_time_ms() == start + 400 + 1500


def test_s63_queued_batch_expires() -> None:
    h = Harness(delivery_timeout_ms=1000, linger_ms=0)
    h.client.backoff(h.node0, 10_000)
    (f,) = h.append()
    h.run_once()
    assert h.produce_requests() == []
    h.time.sleep(1000)
    h.run_once()
    assert isinstance(f.exception(0), KafkaTimeoutError)
    assert "Expiring 1 record(s) for t-0" in str(f.exception(0))


def test_s63_expired_batch_is_not_split() -> None:
    h = Harness(delivery_timeout_ms=1500, request_timeout_ms=5000)
    fs = h.append(n=5)
    h.run_once()
    h.time.sleep(1500)
    h.run_once()
    h.client.respond(produce_response({TP0: (MESSAGE_TOO_LARGE, -1)}))
    h.run_once()
    assert all(isinstance(f.exception(0), KafkaTimeoutError) for f in fs)
    assert not h.accumulator.has_undrained()
    assert h.sender.metrics.splits == 0


def test_s64_message_too_large_splits_without_consuming_a_retry() -> None:
    h2 = Harness(retries=0)  # no retries at all: a split must not need one
    # Now a multi-record batch that the broker rejects as too large.
    big_fs = h2.append(value=b"x" * 100, n=10)
    h2.run_once()
    h2.client.respond(produce_response({TP0: (MESSAGE_TOO_LARGE, -1)}))
    h2.run_once()
    queued = h2.accumulator.batches_for(TP0)
    assert len(queued) > 1 and sum(b.record_count for b in queued) == 10
    assert all(b.attempts == 0 for b in queued)
    assert not any(f.done() for f in big_fs)
    offset = 0
    while not all(f.done() for f in big_fs):
        h2.run_once()
        while h2.client.requests:
            body = h2.client.requests[0].body
            assert isinstance(body, ProduceRequest)
            b = batches_in(body)[TP0]
            h2.client.respond(produce_response({TP0: (NONE, offset)}))
            offset += b.last_offset + 1
        h2.run_once()
    assert [f.result(0).offset for f in big_fs] == list(range(10))


def test_s64_idempotent_split_keeps_sequences() -> None:
    h = Harness(idempotent=True)
    fs = h.append(value=b"x" * 100, n=10)
    h.run_once()
    h.client.respond(produce_response({TP0: (MESSAGE_TOO_LARGE, -1)}))
    h.accumulator.batch_size = 400
    h.run_once()
    seqs = [(b.base_sequence, b.record_count) for b in h.accumulator.batches_for(TP0)]
    expected_base = 0
    for base, count in seqs:
        assert base == expected_base
        expected_base += count
    assert expected_base == 10
    h.run_until(lambda: bool(h.client.requests))
    h.client.respond(produce_response({TP0: (NONE, 0)}))
    h.run_until(lambda: any(f.done() for f in fs))
    assert fs[0].result(0).offset == 0


def test_s65_record_errors_reach_only_their_records() -> None:
    h = Harness()
    fs = h.append(n=3)
    h.run_once()
    h.client.respond(produce_response({TP0: (INVALID_RECORD, -1)}, record_errors={TP0: [(1, "bad record")]}))
    h.run_once()
    assert isinstance(fs[1].exception(0), InvalidRecordError)
    assert "bad record" in str(fs[1].exception(0))
    for i in (0, 2):
        exc = fs[i].exception(0)
        assert isinstance(exc, KafkaError) and not isinstance(exc, InvalidRecordError)


def test_s66_init_producer_id_retriable_error_retried_after_exactly_backoff() -> None:
    h = Harness(idempotent=True, with_producer_id=False, retry_backoff_ms=250, retry_backoff_max_ms=250)
    h.client.prepare_response(init_pid_response(error_code=15), lambda b: isinstance(b, InitProducerIdRequest))  # COORDINATOR_NOT_AVAILABLE
    h.run_once()  # sends InitProducerId
    h.run_once()  # handles the error
    assert len(h.client.sent) == 1
    h.time.sleep(249)
    h.run_once()
    assert len(h.client.sent) == 1
    h.time.sleep(1)
    h.client.prepare_response(init_pid_response(pid=77, epoch=3), lambda b: isinstance(b, InitProducerIdRequest))
    h.run_once()
    assert len(h.client.sent) == 2
    h.run_once()
    assert h.tm is not None and h.tm.producer_id_and_epoch() == (77, 3) and h.tm.state is State.READY


def test_s67_sequences_assigned_at_drain_and_acked_in_order() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    f1 = h.append(n=2)
    h.run_once()
    f2 = h.append(n=3)
    h.run_once()
    sent = [batches_in(b)[TP0] for b in h.produce_requests()]
    assert [(b.base_sequence, b.producer_id, b.producer_epoch) for b in sent] == [(0, PID, 0), (2, PID, 0)]
    assert h.tm.sequence_number(TP0) == 5
    h.client.respond(produce_response({TP0: (NONE, 0)}))
    h.run_once()
    assert h.tm.last_acked_sequence(TP0) == 1
    h.client.respond(produce_response({TP0: (NONE, 2)}))
    h.run_once()
    assert h.tm.last_acked_sequence(TP0) == 4
    assert all(f.done() for f in f1 + f2)


def test_s68_retried_batches_go_one_at_a_time_in_sequence_order() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    f1 = h.append(n=1)
    h.run_once()
    f2 = h.append(n=1)
    h.run_once()
    assert len(h.client.requests) == 2
    h.client.respond(produce_response({TP0: (NOT_LEADER, -1)}))
    h.client.respond(produce_response({TP0: (OUT_OF_ORDER, -1)}))
    h.run_once()
    queued = h.accumulator.batches_for(TP0)
    assert [b.base_sequence for b in queued] == [0, 1]
    h.time.sleep(100)
    for _ in range(3):
        h.run_once()
    assert len(h.client.requests) == 1  # only the first retried batch
    assert batches_in(h.last_request())[TP0].base_sequence == 0
    h.client.respond(produce_response({TP0: (NONE, 10)}))
    h.run_until(lambda: len(h.client.requests) == 1)
    assert batches_in(h.last_request())[TP0].base_sequence == 1
    h.client.respond(produce_response({TP0: (NONE, 11)}))
    h.run_until(lambda: f2[0].done())
    assert f1[0].result(0).offset == 10 and f2[0].result(0).offset == 11
    assert h.tm.last_acked_sequence(TP0) == 1
    assert h.tm.producer_id_and_epoch() == (PID, 0)  # no bump: the gap was an earlier retry


def test_s69_out_of_order_responses_never_move_last_acked_backwards() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    h.append(n=1)
    h.run_once()
    h.append(n=1)
    h.run_once()
    b1, b2 = sorted((b for bs in h.sender.in_flight_batches.values() for b in bs), key=lambda b: b.base_sequence)
    h.tm.handle_completed_batch(b2, 1)
    assert h.tm.last_acked_sequence(TP0) == 1
    h.tm.handle_completed_batch(b1, 0)
    assert h.tm.last_acked_sequence(TP0) == 1


def test_s70_duplicate_sequence_is_success_with_unknown_offset() -> None:
    h = Harness(idempotent=True)
    (f,) = h.append()
    h.run_once()
    h.client.respond(produce_response({TP0: (DUPLICATE_SEQ, 99)}))
    h.run_once()
    assert f.result(0).offset == -1


def test_s71_unknown_producer_id_bumps_epoch_and_resets_sequences() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    f1 = h.append(n=2)
    h.run_once()
    h.client.respond(produce_response({TP0: (NONE, 0)}))
    h.run_once()
    f2 = h.append(n=3)
    h.run_once()
    assert batches_in(h.last_request())[TP0].base_sequence == 2
    # The log start moved past our last acked offset: the broker forgot us.
    h.client.respond(produce_response({TP0: (UNKNOWN_PRODUCER_ID, -1, 5)}))
    h.run_once()
    assert not f2[0].done()
    h.time.sleep(100)
    h.run_until(lambda: bool(h.client.requests))
    sent = batches_in(h.last_request())[TP0]
    assert (sent.producer_id, sent.producer_epoch, sent.base_sequence) == (PID, 1, 0)
    h.client.respond(produce_response({TP0: (NONE, 5)}))
    h.run_until(lambda: f2[0].done())
    assert h.tm.last_acked_sequence(TP0) == 2
    assert h.tm.sequence_number(TP0) == 3
    assert all(f.done() for f in f1)


def test_s72_expired_first_batch_resolved_by_later_success() -> None:
    h = Harness(idempotent=True, delivery_timeout_ms=2000, request_timeout_ms=5000)
    assert h.tm is not None
    (f1,) = h.append()
    h.run_once()
    h.time.sleep(1000)
    (f2,) = h.append()
    h.run_once()
    h.time.sleep(1000)
    h.run_once()  # first batch expires in flight
    assert isinstance(f1.exception(0), KafkaTimeoutError)
    assert h.tm.has_unresolved_sequence(TP0)
    h.client.respond(produce_response({TP0: (NONE, 0)}))  # the expired one's late answer
    h.client.respond(produce_response({TP0: (NONE, 1)}))
    h.run_once()
    h.run_once()
    assert f2.result(0).offset == 1
    assert not h.tm.has_unresolved_sequence(TP0)
    assert h.tm.producer_id_and_epoch() == (PID, 0)


def test_s72_all_sent_batches_expired_cause_epoch_bump() -> None:
    h = Harness(idempotent=True, delivery_timeout_ms=1000, request_timeout_ms=5000)
    assert h.tm is not None
    (f1,) = h.append()
    h.run_once()
    h.time.sleep(1000)
    h.run_once()
    assert isinstance(f1.exception(0), KafkaTimeoutError)
    # New data waits while the sequence is unresolved.
    (f2,) = h.append()
    h.client.disconnect("0")
    h.run_once()
    h.run_once()
    assert h.tm.producer_id_and_epoch() == (PID, 1)
    h.run_until(lambda: bool(h.client.requests))
    sent = batches_in(h.last_request())[TP0]
    assert (sent.producer_epoch, sent.base_sequence) == (1, 0)
    h.client.respond(produce_response({TP0: (NONE, 3)}))
    h.run_until(f2.done)
    assert f2.result(0).offset == 3


def test_s73_sequence_wraps_at_int_max() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    h.tm.increment_sequence_number(TP0, MAX_INT)  # next sequence = MAX_INT
    h.append(n=3)
    h.run_once()
    sent = batches_in(h.last_request())[TP0]
    assert sent.base_sequence == MAX_INT
    assert h.tm.sequence_number(TP0) == 2
    h.client.respond(produce_response({TP0: (NONE, 0)}))
    h.run_once()


def test_s74_cluster_authorization_is_fatal_and_fails_everything() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    (f1,) = h.append(TP0)
    h.run_once()
    (f2,) = h.append(TP1)
    h.run_once()
    (f3,) = h.append(TP0)
    h.client.respond(produce_response({TP0: (CLUSTER_AUTH, -1)}))
    h.run_once()
    h.run_once()
    assert h.tm.has_fatal_error()
    assert isinstance(f1.exception(0), ClusterAuthorizationFailedError)
    assert isinstance(f2.exception(0), ClusterAuthorizationFailedError)  # was in flight
    assert isinstance(f3.exception(0), ClusterAuthorizationFailedError)  # was queued
    # The in-flight response arriving later changes nothing.
    h.client.respond(produce_response({TP1: (NONE, 5)}))
    h.run_once()
    assert isinstance(f2.exception(0), ClusterAuthorizationFailedError)


def test_s74_cluster_authorization_on_init_producer_id_is_fatal() -> None:
    h = Harness(idempotent=True, with_producer_id=False)
    (f,) = h.append()
    h.client.prepare_response(init_pid_response(error_code=CLUSTER_AUTH), lambda b: isinstance(b, InitProducerIdRequest))
    h.run_until(f.done)
    assert isinstance(f.exception(0), ClusterAuthorizationFailedError)


def test_s60_max_in_flight_one_mutes_partition_until_response() -> None:
    h = Harness(max_in_flight=1)
    h.append()
    h.run_once()
    h.append()
    h.run_once()
    assert len(h.produce_requests()) == 1
    h.client.respond(produce_response({TP0: (NONE, 0)}))
    h.run_once()
    h.run_once()
    assert len(h.produce_requests()) == 2


def test_acks_zero_completes_without_offsets() -> None:
    h = Harness(acks=0)
    (f,) = h.append()
    h.client.prepare_response(None, is_produce)
    h.run_once()
    h.run_once()
    assert f.result(0).offset == -1


@pytest.mark.parametrize("code", [NOT_LEADER])
def test_retriable_error_non_idempotent_retries(code: int) -> None:
    h = Harness(retries=0)
    (f,) = h.append()
    h.run_once()
    h.client.respond(produce_response({TP0: (code, -1)}))
    h.run_once()
    assert isinstance(f.exception(0), NotLeaderOrFollowerError)


def test_s71_unknown_producer_id_after_epoch_bump_gets_a_new_producer_id() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    f, _ = h.append(n=2)
    h.run_once()
    h.client.respond(produce_response({TP0: (UNKNOWN_PRODUCER_ID, -1, 0)}))
    h.run_once()  # epoch bump to 1, sequence 0
    h.time.sleep(100)
    h.run_until(lambda: bool(h.client.requests))
    assert batches_in(h.last_request())[TP0].producer_epoch == 1
    h.client.respond(produce_response({TP0: (UNKNOWN_PRODUCER_ID, -1, 0)}))  # still unknown: the id is gone
    h.client.prepare_response(init_pid_response(pid=2000, epoch=0), lambda b: isinstance(b, InitProducerIdRequest))
    h.run_until(lambda: h.tm is not None and h.tm.producer_id_and_epoch() == (2000, 0))
    h.time.sleep(100)
    h.run_until(lambda: bool(h.client.requests))
    sent = batches_in(h.last_request())[TP0]
    assert (sent.producer_id, sent.producer_epoch, sent.base_sequence) == (2000, 0, 0)
    h.client.respond(produce_response({TP0: (NONE, 9)}))
    h.run_until(f.done)
    assert f.result(0).offset == 9
    assert h.tm.sequence_number(TP0) == 2


def test_stale_unknown_producer_id_responses_do_not_bump_twice() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    h.append(n=1)
    h.run_once()
    h.append(n=1)
    h.run_once()
    h.client.respond(produce_response({TP0: (UNKNOWN_PRODUCER_ID, -1, 0)}))
    h.client.respond(produce_response({TP0: (UNKNOWN_PRODUCER_ID, -1, 0)}))
    h.run_once()
    h.run_once()
    assert h.tm.producer_id_and_epoch() == (PID, 1)
    assert [b.base_sequence for b in h.accumulator.batches_for(TP0)] == [0, 1]


def test_epoch_exhaustion_gets_a_new_producer_id() -> None:
    h = Harness(idempotent=True)
    assert h.tm is not None
    h.tm.set_producer_id_and_epoch(PID, 2**15 - 1)
    (f,) = h.append()
    h.run_once()
    h.client.respond(produce_response({TP0: (UNKNOWN_PRODUCER_ID, -1, 0)}))
    h.client.prepare_response(init_pid_response(pid=3000, epoch=0), lambda b: isinstance(b, InitProducerIdRequest))
    h.run_until(lambda: h.tm is not None and h.tm.producer_id_and_epoch() == (3000, 0))
    h.time.sleep(100)
    h.run_until(lambda: bool(h.client.requests))
    sent = batches_in(h.last_request())[TP0]
    assert (sent.producer_id, sent.producer_epoch, sent.base_sequence) == (3000, 0, 0)
    h.client.respond(produce_response({TP0: (NONE, 1)}))
    h.run_until(f.done)
    assert f.result(0).offset == 1


def test_a_ready_batch_for_a_node_that_cannot_take_it_does_not_make_the_loop_spin() -> None:
    """Bug fix (Java Sender.sendProducerData removes the nodes the client is not ready for before choosing a
    0 ms poll): a full batch for a throttled (or, for real, in-flight-limited) node made every iteration poll
    with timeout 0, a busy loop of the I/O thread until the node could take the request."""
    h = Harness()
    h.append()
    h.run_once()  # connect and send the first batch
    h.append()
    h.client.throttle(h.node0, 300)
    assert h.sender.send_producer_data(h.time.hi_res_clock_ms()) == 300
    assert len(h.produce_requests()) == 1
    h.time.sleep(300)
    assert h.sender.send_producer_data(h.time.hi_res_clock_ms()) == 0  # sent, and the loop comes round at once
    assert len(h.produce_requests()) == 2


def test_run_steps_finish_queued_work_after_close() -> None:
    """run() is run_step() until False: a batch still queued at initiate_close is sent and completed."""
    h = Harness()
    (f,) = h.append()
    h.client.prepare_response(produce_response({TP0: (NONE, 7)}), is_produce)
    h.sender.start_run()
    h.sender.initiate_close()
    steps = 0
    while h.sender.run_step():
        steps += 1
        assert steps < 10
    h.sender.finish_run()
    assert len(h.produce_requests()) == 1
    assert f.result(0).offset == 7


def test_ready_and_drain_read_one_metadata_snapshot_per_iteration() -> None:
    """As Java's Sender: one view of the cluster per iteration for the accumulator's ready and drain."""
    h = Harness()
    h.append()
    taken: list[MetadataSnapshot] = []
    read: list[object] = []
    fetch = h.metadata.retain_topics_and_fetch_snapshot
    ready, drain = h.accumulator.ready, h.accumulator.drain

    def fetch_counted(now_ms: int) -> MetadataSnapshot:
        taken.append(fetch(now_ms))
        return taken[-1]

    def ready_counted(metadata: AccumulatorMetadata, now_ms: int) -> ReadyCheckResult:
        read.append(metadata)
        return ready(metadata, now_ms)

    def drain_counted(
        metadata: AccumulatorMetadata, nodes: Iterable[Node], max_size: int, now_ms: int
    ) -> dict[int, list[ProducerBatch]]:
        read.append(metadata)
        return drain(metadata, nodes, max_size, now_ms)

    h.metadata.retain_topics_and_fetch_snapshot = fetch_counted  # type: ignore[method-assign]  # counted, then the real one
    h.accumulator.ready = ready_counted  # type: ignore[method-assign]  # counted, then the real one
    h.accumulator.drain = drain_counted  # type: ignore[method-assign]  # counted, then the real one
    h.run_once()
    assert len(taken) == 1 and read == [taken[0], taken[0]]
    assert len(h.produce_requests()) == 1


def test_in_flight_batches_expire_per_partition_and_the_poll_waits_for_the_next_expiry() -> None:
    """Each iteration looks at the oldest in-flight batch of every partition: one past delivery.timeout.ms fails
    (whichever partition it is, the first in flight or a later one), the others stay in flight, and with nothing to
    send the poll waits until the earliest expiry of those left."""
    h = Harness(delivery_timeout_ms=1500, request_timeout_ms=5000, linger_ms=0, retry_backoff_ms=100)
    (f0,) = h.append(TP0)
    h.run_once()  # TP0's batch in flight, created at 0
    h.time.sleep(100)
    (f1,) = h.append(TP1)
    h.run_once()  # TP1's batch in flight, created at 100
    assert len(h.produce_requests()) == 2
    h.client.respond(produce_response({TP0: (NOT_LEADER, -1)}))
    h.run_once()  # TP0's is retried after the backoff, sent after TP1's: the first in flight expires last
    h.time.sleep(100)
    h.run_until(lambda: len(h.produce_requests()) == 3)
    assert list(h.sender.in_flight_batches) == [TP1, TP0]
    h.time.sleep(1500 - 200 - 1)  # at 1499: none has expired
    h.run_once()
    assert not f0.done() and not f1.done()
    assert h.client.poll_timeouts[-1] == 1  # TP0's expiry (0 + 1500), the earliest
    h.time.sleep(1)  # at 1500: TP0's expires, TP1's (at 1600) stays in flight
    h.run_once()
    assert isinstance(f0.exception(0), KafkaTimeoutError) and not f1.done()
    assert list(h.sender.in_flight_batches) == [TP1]
    assert h.client.poll_timeouts[-1] == 100
    h.time.sleep(100)
    h.run_once()
    assert isinstance(f1.exception(0), KafkaTimeoutError) and h.sender.in_flight_batches == {}

"""The transaction coordinator's APIs on a real MiniBroker over raw frames, at every version served:
FindCoordinator(TRANSACTION), InitProducerId with a transactional id, AddPartitionsToTxn (v0-3 and the
batched v4+ form with verify-only), AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions, and
``__transaction_state`` replayed across a restart. Markers go to a recording TxnMarkerWriter installed in the
broker's context (the partition side's WriteTxnMarkers path is another component)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    ApiVersionsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
)
from tests.integration.wire import Conn
from tests.unit.broker.transaction.harness import RecordingWriter

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
TRANSACTION_ABORTABLE = 120
TOPIC = "t"

Topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic


def start(data_dir: Path) -> tuple[MiniBroker, RecordingWriter]:
    broker = MiniBroker(data_dir=str(data_dir)).start()
    writer = RecordingWriter()
    assert broker.context is not None and broker.replica_manager is not None
    broker.context.txn_marker_writer = writer
    if broker.metadata_cache is not None and broker.metadata_cache.get_topic(TOPIC) is None:
        broker.replica_manager.create_topic(TOPIC, 2, {})
    return broker, writer


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[MiniBroker, RecordingWriter, Conn]]:
    broker, writer = start(tmp_path)
    try:
        with Conn(broker) as c:
            yield broker, writer, c
    finally:
        broker.shutdown()


def init(c: Conn, txn: str, version: int = 4, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1) -> Any:
    return c.call(InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=timeout_ms, producer_id=pid,
                                        producer_epoch=epoch), version)


def add_v3(c: Conn, txn: str, pid: int, epoch: int, parts: list[int], version: int = 3,
           topic: str = TOPIC) -> dict[tuple[str, int], int]:
    r = c.call(AddPartitionsToTxnRequest(v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid,
                                         v3_and_below_producer_epoch=epoch,
                                         v3_and_below_topics=[Topic(name=topic, partitions=parts)]), version)
    return {(t.name, p.partition_index): p.partition_error_code for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition}


def last_marker(writer: RecordingWriter, count: int) -> Any:
    """The marker of the ``count``-th marker request: EndTxn is answered once Prepare* is durable, the markers
    are written just after, so wait for it."""
    deadline = time.monotonic() + 10
    while len(writer.requests) < count:
        assert time.monotonic() < deadline, f"{len(writer.requests)} marker requests, expected {count}"
        time.sleep(0.005)
    return writer.requests[count - 1].markers[0]


def wait_state(c: Conn, txn: str, state: str) -> None:
    deadline = time.monotonic() + 10
    while (current := describe(c, txn)[0].transaction_state) != state:
        assert time.monotonic() < deadline, f"{txn} is {current}, expected {state}"
        time.sleep(0.005)


def end(c: Conn, txn: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    r = c.call(EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=commit), version)
    return int(r.error_code)


def describe(c: Conn, *txns: str) -> list[Any]:
    return list(c.call(DescribeTransactionsRequest(transactional_ids=list(txns)), 0).transaction_states)


def test_api_versions_and_find_coordinator(env: tuple[MiniBroker, RecordingWriter, Conn]) -> None:
    broker, _, c = env
    ranges = {k.api_key: (k.min_version, k.max_version) for k in c.call(ApiVersionsRequest(), 0).api_keys}
    assert ranges[ApiKey.INIT_PRODUCER_ID] == (0, 5)
    assert ranges[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 5)
    assert ranges[ApiKey.ADD_OFFSETS_TO_TXN] == (0, 4)
    assert ranges[ApiKey.END_TXN] == (0, 4)
    assert ranges[ApiKey.DESCRIBE_TRANSACTIONS] == (0, 0)
    assert ranges[ApiKey.LIST_TRANSACTIONS] == (0, 1)
    r = c.call(FindCoordinatorRequest(key_type=1, coordinator_keys=["a", "b"]), 4)
    assert [(x.key, x.error_code, x.port) for x in r.coordinators] == [("a", NONE, broker.port),
                                                                       ("b", NONE, broker.port)]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_init_producer_id_versions(env: tuple[MiniBroker, RecordingWriter, Conn], version: int) -> None:
    _, _, c = env
    r = init(c, "tx", version)
    assert (r.error_code, r.producer_epoch) == (NONE, 0)
    r2 = init(c, "tx", version)
    assert (r2.error_code, r2.producer_id, r2.producer_epoch) == (NONE, r.producer_id, 1)
    assert init(c, "tx", version, timeout_ms=900001).error_code == INVALID_TRANSACTION_TIMEOUT
    idempotent = c.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), version)
    assert (idempotent.error_code, idempotent.producer_epoch) == (NONE, 0)  # the idempotent path is unchanged
    if version >= 3:  # PRODUCER_FENCED from v4; v3 clients know it as INVALID_PRODUCER_EPOCH
        assert init(c, "tx", version, pid=r.producer_id, epoch=0).error_code == (
            PRODUCER_FENCED if version >= 4 else INVALID_PRODUCER_EPOCH)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_commit_and_abort_with_the_client_form(env: tuple[MiniBroker, RecordingWriter, Conn], version: int) -> None:
    _, writer, c = env
    r = init(c, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    assert add_v3(c, "tx", pid, epoch, [0, 1], version) == {(TOPIC, 0): NONE, (TOPIC, 1): NONE}
    fenced = PRODUCER_FENCED if version >= 2 else INVALID_PRODUCER_EPOCH  # the v2+ error for older clients
    assert add_v3(c, "tx", pid, epoch + 1, [0], version) == {(TOPIC, 0): fenced}
    assert end(c, "tx", pid, epoch + 1, True, version) == fenced
    assert add_v3(c, "tx", pid, epoch, [0, 7], version) == {(TOPIC, 0): OPERATION_NOT_ATTEMPTED,
                                                             (TOPIC, 7): UNKNOWN_TOPIC_OR_PARTITION}
    assert [d.transaction_state for d in describe(c, "tx")] == ["Ongoing"]
    assert end(c, "tx", pid, epoch, True, min(version, 3)) == NONE
    marker = last_marker(writer, 1)
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result) == (pid, epoch, True)
    assert sorted(p for t in marker.topics for p in t.partition_indexes) == [0, 1]
    wait_state(c, "tx", "CompleteCommit")
    assert end(c, "tx", pid, epoch, True) == NONE  # retry of a completed commit
    assert end(c, "tx", pid, epoch, False) == INVALID_TXN_STATE
    assert add_v3(c, "tx", pid, epoch, [1], version) == {(TOPIC, 1): NONE}
    assert end(c, "tx", pid, epoch, False, 0) == NONE
    assert last_marker(writer, 2).transaction_result is False
    wait_state(c, "tx", "CompleteAbort")


@pytest.mark.parametrize("version", [4, 5])
def test_batched_add_and_verify_only(env: tuple[MiniBroker, RecordingWriter, Conn], version: int) -> None:
    _, _, c = env
    a, b = init(c, "a"), init(c, "b")
    Txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    r = c.call(AddPartitionsToTxnRequest(transactions=[
        Txn(transactional_id="a", producer_id=a.producer_id, producer_epoch=a.producer_epoch,
            topics=[Topic(name=TOPIC, partitions=[0])]),
        Txn(transactional_id="b", producer_id=b.producer_id, producer_epoch=b.producer_epoch + 3,
            topics=[Topic(name=TOPIC, partitions=[1])])]), version)
    results = {x.transactional_id: {(t.name, p.partition_index): p.partition_error_code
                                    for t in x.topic_results for p in t.results_by_partition}
               for x in r.results_by_transaction}
    assert r.error_code == NONE
    assert results == {"a": {(TOPIC, 0): NONE}, "b": {(TOPIC, 1): PRODUCER_FENCED}}
    r = c.call(AddPartitionsToTxnRequest(transactions=[
        Txn(transactional_id="a", producer_id=a.producer_id, producer_epoch=a.producer_epoch, verify_only=True,
            topics=[Topic(name=TOPIC, partitions=[0, 1])])]), version)
    verified = {p.partition_index: p.partition_error_code for p in r.results_by_transaction[0].topic_results[0]
                .results_by_partition}
    assert verified == {0: NONE, 1: TRANSACTION_ABORTABLE if version >= 5 else INVALID_TXN_STATE}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_add_offsets_to_txn(env: tuple[MiniBroker, RecordingWriter, Conn], version: int) -> None:
    _, writer, c = env
    r = init(c, "tx")
    req = AddOffsetsToTxnRequest(transactional_id="tx", producer_id=r.producer_id, producer_epoch=r.producer_epoch,
                                 group_id="g")
    assert c.call(req, version).error_code == NONE
    [d] = describe(c, "tx")
    # the group's partition of the 50 (offsets.topic.num.partitions' default): Java's "g".hashCode() is 103
    assert [(t.topic, list(t.partitions)) for t in d.topics] == [("__consumer_offsets", [103 % 50])]
    assert end(c, "tx", r.producer_id, r.producer_epoch, True, min(version, 4)) == NONE
    assert [t.name for t in last_marker(writer, 1).topics] == ["__consumer_offsets"]
    bad = AddOffsetsToTxnRequest(transactional_id="tx", producer_id=r.producer_id + 1,
                                 producer_epoch=r.producer_epoch, group_id="g")
    assert c.call(bad, version).error_code == INVALID_PRODUCER_ID_MAPPING


def test_end_txn_errors_and_fencing(env: tuple[MiniBroker, RecordingWriter, Conn]) -> None:
    _, writer, c = env
    assert end(c, "nobody", 12345, 0, True) == INVALID_PRODUCER_ID_MAPPING
    r = init(c, "tx")
    pid, epoch = r.producer_id, r.producer_epoch
    assert end(c, "tx", pid + 1, epoch, True) == INVALID_PRODUCER_ID_MAPPING  # unknown producer id
    assert end(c, "tx", pid, epoch, True) == INVALID_TXN_STATE  # no transaction
    assert add_v3(c, "tx", pid, epoch, [0]) == {(TOPIC, 0): NONE}
    # a second producer with the same id fences the open transaction: it is aborted, the retry gets a bump
    assert init(c, "tx").error_code == CONCURRENT_TRANSACTIONS
    assert last_marker(writer, 1).transaction_result is False
    wait_state(c, "tx", "CompleteAbort")
    again = init(c, "tx")
    assert (again.error_code, again.producer_id, again.producer_epoch) == (NONE, pid, epoch + 2)
    assert end(c, "tx", pid, epoch, True) == PRODUCER_FENCED


def test_describe_and_list_transactions(env: tuple[MiniBroker, RecordingWriter, Conn]) -> None:
    _, _, c = env
    r = init(c, "open", timeout_ms=30000)
    init(c, "idle")
    add_v3(c, "open", r.producer_id, r.producer_epoch, [1, 0])
    d, missing = describe(c, "open", "missing")
    assert (d.error_code, d.transaction_state, d.transaction_timeout_ms, d.producer_id, d.producer_epoch) == (
        NONE, "Ongoing", 30000, r.producer_id, r.producer_epoch)
    assert d.transaction_start_time_ms > 0 and [(t.topic, sorted(t.partitions)) for t in d.topics] == [(TOPIC, [0, 1])]
    assert missing.error_code == TRANSACTIONAL_ID_NOT_FOUND
    listed = c.call(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0)
    assert sorted((t.transactional_id, t.transaction_state) for t in listed.transaction_states) == [
        ("idle", "Empty"), ("open", "Ongoing")]
    listed = c.call(ListTransactionsRequest(state_filters=["Ongoing", "Nope"], producer_id_filters=[]), 0)
    assert [t.transactional_id for t in listed.transaction_states] == ["open"]
    assert list(listed.unknown_state_filters) == ["Nope"]
    listed = c.call(ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[],
                                            duration_filter=3_600_000), 1)
    assert list(listed.transaction_states) == []


def test_transaction_state_survives_a_restart(tmp_path: Path) -> None:
    broker, _ = start(tmp_path)
    try:
        with Conn(broker) as c:
            r = init(c, "tx")
            add_v3(c, "tx", r.producer_id, r.producer_epoch, [0])
            init(c, "done")
    finally:
        broker.shutdown()
    broker, writer = start(tmp_path)
    try:
        with Conn(broker) as c:
            [d] = describe(c, "tx")
            assert (d.transaction_state, d.producer_id) == ("Ongoing", r.producer_id)
            assert end(c, "tx", r.producer_id, r.producer_epoch, True) == NONE
            assert last_marker(writer, 1).producer_id == r.producer_id
            assert init(c, "new").producer_id > r.producer_id  # ids are never handed out twice
    finally:
        broker.shutdown()


def test_prepare_commit_at_restart_is_completed(tmp_path: Path) -> None:
    """EndTxn answered, the broker stopped before any marker could be written: after the restart the
    coordinator finds PrepareCommit in ``__transaction_state``, writes the markers and completes."""
    broker, _ = start(tmp_path)
    try:
        assert broker.context is not None
        broker.context.txn_marker_writer = None  # markers cannot be written: the transaction stays prepared
        with Conn(broker) as c:
            r = init(c, "tx")
            add_v3(c, "tx", r.producer_id, r.producer_epoch, [0, 1])
            assert end(c, "tx", r.producer_id, r.producer_epoch, True) == NONE
            assert describe(c, "tx")[0].transaction_state == "PrepareCommit"
            assert end(c, "tx", r.producer_id, r.producer_epoch, True) == CONCURRENT_TRANSACTIONS
    finally:
        broker.shutdown()
    broker = MiniBroker(data_dir=str(tmp_path))
    writer = RecordingWriter()
    broker.start()
    try:
        assert broker.context is not None
        if broker.context.txn_marker_writer is None:
            broker.context.txn_marker_writer = writer  # picked up by the coordinator's marker retry
        with Conn(broker) as c:
            wait_state(c, "tx", "CompleteCommit")
            assert end(c, "tx", r.producer_id, r.producer_epoch, True) == NONE
    finally:
        broker.shutdown()

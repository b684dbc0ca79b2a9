"""The share group APIs (KIP-932) on the wire against a real MiniBroker: ShareGroupHeartbeat / ShareGroupDescribe
(a restart keeps the group: its records are in ``__consumer_offsets``), ShareFetch long-polling in the fetch
purgatory, share session epochs, acknowledgement errors, ShareAcknowledge closing a session, authorization."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from mini_broker.security.authorizer import STANDARD_AUTHORIZER
from pykafka_client import KafkaProducer
from pykafka_client.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    InvalidRecordStateError,
    InvalidShareSessionEpochError,
    ShareSessionNotFoundError,
)
from pykafka_client.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from pykafka_client.protocol.records import MemoryRecords
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TOPIC = "share-wire"
ACCEPT, RELEASE = 1, 2


def _broker(**conf: Any) -> MiniBroker:
    conf.setdefault("share_auto_offset_reset", "earliest")
    return MiniBroker(num_network_threads=1, num_io_threads=2, **conf)


def _create_topic(c: Conn, broker: MiniBroker) -> uuid.UUID:
    c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=1)]), 5)
    assert broker.metadata_cache is not None
    md = broker.metadata_cache.get_topic(TOPIC)
    assert md is not None
    return md.topic_id


def _produce(broker: MiniBroker, values: list[str]) -> None:
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        for v in values:
            p.send(TOPIC, value=v.encode(), partition=0)
        p.flush()


def _join(c: Conn, group: str, member: str) -> Any:
    return c.call(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0,
                                             subscribed_topic_names=[TOPIC]), 1)


def _fetch(c: Conn, group: str, member: str, epoch: int, topic_id: uuid.UUID,
           acks: Sequence[tuple[int, int, int]] = (), max_wait_ms: int = 0, max_records: int = 100) -> Any:
    batches = [ShareFetchRequest.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=[t])
               for f, last, t in acks]
    return c.call(ShareFetchRequest(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms, min_bytes=1,
        max_bytes=1 << 20, max_records=max_records, batch_size=100, topics=[ShareFetchRequest.FetchTopic(
            topic_id=topic_id, partitions=[ShareFetchRequest.FetchPartition(
                partition_index=0, acknowledgement_batches=batches)])]), 1)


def _values(partition: Any) -> list[bytes | None]:
    return [r.value for r in MemoryRecords(bytes(partition.records)).records()]


def test_a_restarted_broker_keeps_its_share_groups(tmp_path: Any) -> None:
    def start() -> MiniBroker:
        return _broker(data_dir=str(tmp_path))

    with start() as b, Conn(b) as c:
        topic_id = _create_topic(c, b)
        joined = _join(c, "sg-restart", "m-restart")
        assert (joined.error_code, joined.member_id, joined.member_epoch) == (0, "m-restart", 1)
        assert [(t.topic_id, t.partitions) for t in joined.assignment.topic_partitions] == [(topic_id, [0])]
    with start() as b, Conn(b) as c:
        hb = c.call(ShareGroupHeartbeatRequest(group_id="sg-restart", member_id="m-restart", member_epoch=1), 1)
        assert hb.error_code == 0 and hb.member_epoch >= 1
        d = c.call(ShareGroupDescribeRequest(group_ids=["sg-restart"]), 1).groups[0]
        assert (d.error_code, d.group_state, d.assignor_name) == (0, "Stable", "simple")
        assert [m.member_id for m in d.members] == ["m-restart"]
        assert [(t.topic_name, t.partitions) for t in d.members[0].assignment.topic_partitions] == [(TOPIC, [0])]


def test_a_group_id_of_another_type_is_not_a_share_group() -> None:
    with _broker() as b, Conn(b) as c:
        _create_topic(c, b)
        assert c.call(ConsumerGroupHeartbeatRequest(
            group_id="taken", member_id="cm", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=[TOPIC], topic_partitions=[]), 1).error_code == 0
        assert _join(c, "taken", "sm").error_code == GroupIdNotFoundError.code
        d = c.call(ShareGroupDescribeRequest(group_ids=["nope"]), 1).groups[0]
        assert d.error_code == GroupIdNotFoundError.code


def test_share_fetch_long_polls_until_records_arrive() -> None:
    with _broker() as b, Conn(b) as c:
        topic_id = _create_topic(c, b)
        _join(c, "sg-poll", "m1")
        out: list[Any] = []
        waiting = threading.Thread(target=lambda: out.append(_fetch(c, "sg-poll", "m1", 0, topic_id,
                                                                    max_wait_ms=15000)))
        waiting.start()
        _produce(b, ["late"])
        waiting.join(30)
        p = out[0].responses[0].partitions[0]
        assert _values(p) == [b"late"]
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records] == [(0, 0, 1)]


def test_share_sessions_acquisitions_and_acknowledgements() -> None:
    with _broker(group_share_record_lock_duration_ms=60000) as b, Conn(b) as c:
        topic_id = _create_topic(c, b)
        _produce(b, ["a", "b", "c"])
        first = _fetch(c, "sg-ack", "m1", 0, topic_id)
        assert first.acquisition_lock_timeout_ms == 60000
        p = first.responses[0].partitions[0]
        assert _values(p) == [b"a", b"b", b"c"]
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records] == [(0, 2, 1)]
        # another member: nothing left to acquire; acknowledging m1's records is refused
        other = _fetch(c, "sg-ack", "m2", 0, topic_id, acks=[(0, 0, ACCEPT)])
        op = other.responses[0].partitions[0]
        assert op.acknowledge_error_code == InvalidRecordStateError.code and op.acquired_records == []
        assert _fetch(c, "sg-ack", "m1", 5, topic_id).error_code == InvalidShareSessionEpochError.code
        assert _fetch(c, "sg-ack", "m9", 3, topic_id).error_code == ShareSessionNotFoundError.code
        # m1 accepts a, releases b; m2 gets b again with its count raised
        acked = _fetch(c, "sg-ack", "m1", 1, topic_id, acks=[(0, 0, ACCEPT), (1, 1, RELEASE)], max_records=0)
        assert acked.responses[0].partitions[0].acknowledge_error_code == 0
        again = _fetch(c, "sg-ack", "m2", 1, topic_id).responses[0].partitions[0]
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in again.acquired_records] == [(1, 1, 2)]
        # ShareAcknowledge cannot open a session; closing m1's session releases c for m2
        assert c.call(ShareAcknowledgeRequest(group_id="sg-ack", member_id="m1", share_session_epoch=0), 1) \
            .error_code == InvalidShareSessionEpochError.code
        closed = c.call(ShareAcknowledgeRequest(group_id="sg-ack", member_id="m1", share_session_epoch=-1), 1)
        assert closed.error_code == 0
        last = _fetch(c, "sg-ack", "m2", 2, topic_id).responses[0].partitions[0]
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in last.acquired_records] == [(2, 2, 2)]


def test_the_share_apis_are_authorized() -> None:
    with _broker(**{"authorizer.class.name": STANDARD_AUTHORIZER}) as b, Conn(b) as c:
        assert _join(c, "sg-denied", "m").error_code == GroupAuthorizationFailedError.code
        fetched = _fetch(c, "sg-denied", "m", 0, uuid.uuid4())
        assert fetched.error_code == GroupAuthorizationFailedError.code
        d = c.call(ShareGroupDescribeRequest(group_ids=["sg-denied"]), 1).groups[0]
        assert d.error_code == GroupAuthorizationFailedError.code


def test_read_committed_share_isolation_skips_aborted_transactions() -> None:
    with _broker(share_isolation_level="read_committed", transaction_state_log_replication_factor=1,
                 transaction_state_log_min_isr=1) as b, Conn(b) as c:
        topic_id = _create_topic(c, b)
        with KafkaProducer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "share-txn"}) as p:
            p.init_transactions()
            for values, commit in ((["c1", "c2"], True), (["x1", "x2"], False), (["c3"], True)):
                p.begin_transaction()
                for v in values:
                    p.send(TOPIC, value=v.encode(), partition=0)
                p.flush()
                if commit:
                    p.commit_transaction()
                else:
                    p.abort_transaction()
        part = _fetch(c, "sg-txn", "m1", 0, topic_id).responses[0].partitions[0]
        acquired = {o for r in part.acquired_records for o in range(r.first_offset, r.last_offset + 1)}
        delivered = [r.value for r in MemoryRecords(bytes(part.records)).records() if r.offset in acquired]
        assert delivered == [b"c1", b"c2", b"c3"]


GROUP_RESOURCE, SET, INVALID_CONFIG, GROUP_CONFIG_SOURCE = 32, 0, 40, 8


def _alter_group(c: Conn, group: str, name: str, value: str) -> Any:
    return c.call(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
            name=name, config_operation=SET, value=value)])], validate_only=False), 1).responses[0]


def _group_configs(c: Conn, group: str) -> dict[str, tuple[str, int]]:
    r = c.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=None)], include_synonyms=False,
        include_documentation=False), 4)
    return {e.name: (e.value, e.config_source) for e in r.results[0].configs if e.name.startswith("share.")}


def test_share_configs_are_set_per_group_and_kept_across_a_restart(tmp_path: Any) -> None:
    def start() -> MiniBroker:
        return _broker(data_dir=str(tmp_path), share_auto_offset_reset="latest")

    with start() as b, Conn(b) as c:
        topic_id = _create_topic(c, b)
        _produce(b, ["old1", "old2"])
        assert _alter_group(c, "sg-early", "share.auto.offset.reset", "earliest").error_code == 0
        assert _alter_group(c, "sg-early", "share.record.lock.duration.ms", "12345").error_code == 0
        bad = _alter_group(c, "sg-early", "share.isolation.level", "sometimes")
        assert bad.error_code == INVALID_CONFIG and "read_committed" in bad.error_message
        # the broker default (latest) for another group: the records already there are not delivered
        late = _fetch(c, "sg-late", "m1", 0, topic_id).responses[0].partitions[0]
        assert late.acquired_records == []
    with start() as b, Conn(b) as c:
        assert _group_configs(c, "sg-early")["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG_SOURCE)
        assert _group_configs(c, "sg-early")["share.isolation.level"] == ("read_uncommitted", 5)
        fetched = _fetch(c, "sg-early", "m1", 0, topic_id)
        assert fetched.acquisition_lock_timeout_ms == 12345
        assert _values(fetched.responses[0].partitions[0]) == [b"old1", b"old2"]


def test_a_record_is_archived_at_the_delivery_count_limit() -> None:
    with _broker(group_share_delivery_count_limit=2) as b, Conn(b) as c:
        topic_id = _create_topic(c, b)
        _produce(b, ["poison"])
        _produce(b, ["next"])  # its own batch: acquiring "poison" alone takes only offset 0
        epoch = 0
        for delivery in (1, 2):
            part = _fetch(c, "sg-limit", "m1", epoch, topic_id, max_records=1).responses[0].partitions[0]
            assert [(r.first_offset, r.last_offset, r.delivery_count) for r in part.acquired_records] == [
                (0, 0, delivery)]
            epoch += 1
            acked = _fetch(c, "sg-limit", "m1", epoch, topic_id, max_records=0, acks=[(0, 0, RELEASE)])
            assert acked.responses[0].partitions[0].acknowledge_error_code == 0
            epoch += 1
        # released a second time at the limit (2): archived; the next fetch starts past it
        part = _fetch(c, "sg-limit", "m1", epoch, topic_id).responses[0].partitions[0]
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in part.acquired_records] == [(1, 1, 1)]

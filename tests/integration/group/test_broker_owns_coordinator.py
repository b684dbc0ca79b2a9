"""Each MiniBroker owns its group coordinator: two brokers in one process keep separate groups and offsets
under the same group id, and shutting one down leaves the other's coordinator serving."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.protocol.messages import (
    CreateTopicsRequest,
    DescribeGroupsRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from tests.integration.wire import Conn
from tests.unit.broker.group.harness import subscription

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

NONE = 0
TOPIC = "shared-name"
GROUP = "same-group"


def _broker() -> MiniBroker:
    b = MiniBroker(num_network_threads=1, num_io_threads=1, group_initial_rebalance_delay_ms=0).start()
    with Conn(b) as c:
        resp = c.call(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
            name=TOPIC, num_partitions=1, replication_factor=1)]), 5)
        assert resp.topics[0].error_code == NONE
    return b


@pytest.fixture
def brokers() -> Iterator[tuple[MiniBroker, MiniBroker]]:
    a, b = _broker(), _broker()
    try:
        yield a, b
    finally:
        a.shutdown()
        b.shutdown()


def _commit(c: Conn, offset: int) -> int:
    r = c.call(OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])]), 2)
    return int(r.topics[0].partitions[0].error_code)


def _fetch(c: Conn) -> tuple[int, int]:
    r = c.call(OffsetFetchRequest(group_id=GROUP, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
        name=TOPIC, partition_indexes=[0])]), 2)
    return int(r.error_code), int(r.topics[0].partitions[0].committed_offset)


def _describe(c: Conn) -> Any:
    return c.call(DescribeGroupsRequest(groups=[GROUP]), 5).groups[0]


def test_same_group_id_on_two_brokers_is_two_groups(brokers: tuple[MiniBroker, MiniBroker]) -> None:
    a, b = brokers
    assert a.group_coordinator is not None and b.group_coordinator is not None
    assert a.group_coordinator is not b.group_coordinator
    with Conn(a) as ca, Conn(b) as cb:
        assert _commit(ca, 5) == NONE
        assert _fetch(cb) == (NONE, -1)  # nothing committed on b
        assert _commit(cb, 7) == NONE
        assert (_fetch(ca), _fetch(cb)) == ((NONE, 5), (NONE, 7))
        join = ca.call(JoinGroupRequest(group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                        member_id="", protocol_type="consumer", protocols=[
                                            JoinGroupRequest.JoinGroupRequestProtocol(
                                                name="range", metadata=subscription(TOPIC))]), 0)
        assert join.error_code == NONE
        assert [m.member_id for m in _describe(ca).members] == [join.member_id]
        assert _describe(cb).members == []  # the member joined a's group only


def test_one_broker_shutting_down_leaves_the_others_coordinator_serving(
        brokers: tuple[MiniBroker, MiniBroker]) -> None:
    a, b = brokers
    a.shutdown()
    assert a.group_coordinator is not None and not a.group_coordinator.is_active
    with Conn(b) as cb:
        assert _commit(cb, 3) == NONE
        assert _fetch(cb) == (NONE, 3)

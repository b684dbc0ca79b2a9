"""Metadata on a cluster answers with the endpoints of the request's listener (Kafka): a partition whose leader has
no endpoint there has no leader for that client, LISTENER_NOT_FOUND (v6+) when the leader is a registered broker."""

from __future__ import annotations

import pytest

from mini_broker.server.apis.metadata import Partition, Topic, hide_leaders_without_listener
from pykafka_client.errors import LeaderNotAvailableError, ListenerNotFoundError


def _topic(*leaders: int) -> Topic:
    return Topic(error_code=0, name="t", is_internal=False,
                 partitions=[Partition(error_code=0, partition_index=i, leader_id=leader, leader_epoch=1,
                                       replica_nodes=[leader], isr_nodes=[leader]) for i, leader in enumerate(leaders)])


@pytest.mark.parametrize(("version", "unreachable_code"), [(12, ListenerNotFoundError.code),
                                                          (6, ListenerNotFoundError.code),
                                                          (5, LeaderNotAvailableError.code)])
def test_a_leader_without_the_listener_is_hidden(version: int, unreachable_code: int) -> None:
    topic = _topic(0, 2, 7, -1)  # 0 has the listener; 2 is registered without it; 7 is not registered
    hide_leaders_without_listener([topic], {0, 1}, lambda b: b in (0, 1, 2), version)
    assert [(p.error_code, p.leader_id) for p in topic.partitions] == [
        (0, 0), (unreachable_code, -1), (LeaderNotAvailableError.code, -1), (0, -1)]
    assert topic.partitions[1].replica_nodes == [2]  # the replicas are still listed

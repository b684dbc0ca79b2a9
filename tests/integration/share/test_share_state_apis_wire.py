"""The share coordinator's APIs (KIP-932: InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState) on the wire against a real MiniBroker: a write is read back, a
leader of an older epoch is fenced once a newer one read the state, a write of an older state epoch after an
initialize is fenced, a deleted state reads as never written."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.errors import FencedLeaderEpochError, FencedStateEpochError
from pykafka_client.protocol.messages import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    WriteShareGroupStateRequest,
)
from tests.integration.wire import Conn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TOPIC_ID = uuid.UUID(int=42)
GROUP = "sg-state"
AVAILABLE, ACKNOWLEDGED = 0, 2


@pytest.fixture
def conn() -> Iterator[Conn]:
    broker = MiniBroker(num_network_threads=1, num_io_threads=2).start()
    try:
        with Conn(broker) as c:
            yield c
    finally:
        broker.shutdown()


def _read(conn: Conn, leader_epoch: int) -> Any:
    R = ReadShareGroupStateRequest
    resp = conn.call(R(group_id=GROUP, topics=[R.ReadStateData(topic_id=TOPIC_ID, partitions=[
        R.PartitionData(partition=0, leader_epoch=leader_epoch)])]), 0)
    return resp.results[0].partitions[0]


def _write(conn: Conn, leader_epoch: int, start: int, batches: list[tuple[int, int, int, int]],
           state_epoch: int = 0) -> int:
    W = WriteShareGroupStateRequest
    resp = conn.call(W(group_id=GROUP, topics=[W.WriteStateData(topic_id=TOPIC_ID, partitions=[W.PartitionData(
        partition=0, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start,
        state_batches=[W.StateBatch(first_offset=f, last_offset=la, delivery_state=s, delivery_count=c)
                       for f, la, s, c in batches])])]), 0)
    return int(resp.results[0].partitions[0].error_code)


def test_a_write_is_read_back_and_a_leader_of_an_older_epoch_is_fenced(conn: Conn) -> None:
    assert _read(conn, 1).start_offset == -1  # never written
    assert _write(conn, 1, 0, [(0, 4, AVAILABLE, 1)]) == 0
    assert _write(conn, 1, 2, [(3, 3, ACKNOWLEDGED, 1)]) == 0  # an update: start offset and one record
    got = _read(conn, 2)  # a new leader (epoch 2) reads it
    assert (got.error_code, got.state_epoch, got.start_offset) == (0, 0, 2)
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in got.state_batches] == [
        (2, 2, AVAILABLE, 1), (3, 3, ACKNOWLEDGED, 1), (4, 4, AVAILABLE, 1)]
    assert _write(conn, 1, 5, []) == FencedLeaderEpochError.code
    assert _read(conn, 1).error_code == FencedLeaderEpochError.code
    assert _read(conn, 2).start_offset == 2


def test_initialize_fences_older_state_epochs_and_delete_forgets_the_state(conn: Conn) -> None:
    assert _write(conn, 0, 0, [(0, 1, AVAILABLE, 1)]) == 0
    I = InitializeShareGroupStateRequest  # noqa: E741
    resp = conn.call(I(group_id=GROUP, topics=[I.InitializeStateData(topic_id=TOPIC_ID, partitions=[
        I.PartitionData(partition=0, state_epoch=1, start_offset=10)])]), 0)
    assert resp.results[0].partitions[0].error_code == 0
    assert _write(conn, 0, 11, [], state_epoch=0) == FencedStateEpochError.code
    got = _read(conn, 0)
    assert (got.state_epoch, got.start_offset, got.state_batches) == (1, 10, [])
    D = DeleteShareGroupStateRequest
    resp = conn.call(D(group_id=GROUP, topics=[D.DeleteStateData(topic_id=TOPIC_ID, partitions=[
        D.PartitionData(partition=0)])]), 0)
    assert resp.results[0].partitions[0].error_code == 0
    assert _read(conn, 0).start_offset == -1

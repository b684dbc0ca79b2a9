"""The AdminClient's coordinator-bound calls find a moved or dead coordinator again (Java ``KafkaAdminClient``:
NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, or a disconnect from the coordinator, looks it up again with
FindCoordinator after ``retry.backoff.ms`` and sends again, until the call's timeout; the timeout then names the
call, the group, the coordinator last tried and the last error). On a MockSelector and MockTime: a "dead" broker
drops its connection and refuses new ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pykafka_client import TopicPartition
from pykafka_client.admin import OffsetSpec, api_table
from pykafka_client.admin.lookups import Coordinators
from pykafka_client.errors import DisconnectError, KafkaTimeoutError, NotCoordinatorError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    DescribeTransactionsResponse,
    FindCoordinatorResponse,
    ListOffsetsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
)
from pykafka_client.structs import OffsetAndMetadata
from tests.doubles.mock_selector import SentRequest
from tests.doubles.responses import metadata_response
from tests.unit.network.test_admin_client import BROKERS, Env
from tests.unit.network.test_admin_share_group_offsets import _described as _share_offsets

NOT_COORDINATOR = 16
TP = TopicPartition("t", 0)
#: retry.backoff.ms of the tests' admin (the default)
BACKOFF_MS = 100


def _find_coordinator(answers: list[int] | Callable[[], int]) -> Callable[[SentRequest], FindCoordinatorResponse]:
    """FindCoordinator names the brokers of ``answers`` in turn (the last one from then on), or ``answers()``."""

    def answer(r: SentRequest) -> FindCoordinatorResponse:
        if callable(answers):
            node_id = answers()
        else:
            node_id = answers.pop(0) if len(answers) > 1 else answers[0]
        node = next((b for b in BROKERS if b.id == node_id), None)
        host, port = (node.host, node.port) if node is not None else ("127.0.0.1", 9999)
        return FindCoordinatorResponse(coordinators=[
            FindCoordinatorResponse.Coordinator(key=k, node_id=node_id, host=host, port=port)
            for k in r.body.coordinator_keys])

    return answer


def _kill(env: Env, broker_id: int) -> None:
    """Broker ``broker_id`` dies: its connection is lost and new connections are refused."""
    node = BROKERS[broker_id]
    env.selector.refused.add((node.host, node.port))
    env.selector.server_disconnect(str(broker_id))


def _dies_when_asked(env: Env, broker_id: int, answer: Callable[[SentRequest], Any]) -> Callable[[SentRequest], Any]:
    """A responder: broker ``broker_id`` dies on the request (no answer), the others answer ``answer(r)``."""

    def respond(r: SentRequest) -> Any:
        if r.destination == str(broker_id):
            _kill(env, broker_id)
            return None
        return answer(r)

    return respond


def _offsets(r: SentRequest) -> OffsetFetchResponse:
    _F = OffsetFetchResponse
    return _F(groups=[_F.OffsetFetchResponseGroup(group_id=g.group_id, topics=[_F.OffsetFetchResponseTopics(
        name="t", partitions=[_F.OffsetFetchResponsePartitions(partition_index=0, committed_offset=42)])])
        for g in r.body.groups])


def test_not_coordinator_looks_the_coordinator_up_again_and_the_new_one_answers() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _find_coordinator([0, 1])
    env.responders[ApiKey.OFFSET_FETCH] = lambda r: _offsets(r) if r.destination == "1" else OffsetFetchResponse(
        groups=[OffsetFetchResponse.OffsetFetchResponseGroup(group_id="g", error_code=NOT_COORDINATOR)])
    started = env.time.milliseconds()
    assert env.admin.list_consumer_group_offsets("g", timeout=30) == {TP: OffsetAndMetadata(42, "")}
    assert [r.destination for r in env.sent(ApiKey.OFFSET_FETCH)] == ["0", "1"]
    assert len(env.sent(ApiKey.FIND_COORDINATOR)) == 2
    assert env.time.milliseconds() - started >= BACKOFF_MS  # looked up again after retry.backoff.ms


def test_a_coordinator_that_dies_is_looked_up_again_and_its_successor_answers() -> None:
    """The coordinator drops the connection with the OffsetFetch in flight; FindCoordinator still names it once
    (its death is not noticed yet: the connection is refused), then names its successor, which answers. The old
    code asked the dead broker until the call's timeout."""
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _find_coordinator([0, 0, 1])
    env.responders[ApiKey.OFFSET_FETCH] = _dies_when_asked(env, 0, _offsets)
    started = env.time.milliseconds()
    assert env.admin.list_consumer_group_offsets("g", timeout=30) == {TP: OffsetAndMetadata(42, "")}
    assert [r.destination for r in env.sent(ApiKey.OFFSET_FETCH)] == ["0", "1"]
    assert len(env.sent(ApiKey.FIND_COORDINATOR)) == 3  # after the disconnect, after the refused connection
    assert env.time.milliseconds() - started < 30_000 // 10  # a few backoffs, nowhere near the timeout


def test_a_coordinator_the_metadata_does_not_have_is_looked_up_again() -> None:
    """FindCoordinator names broker 7, which fresh metadata does not list (it left the cluster): the coordinator
    is looked up again instead of waiting for broker 7 to appear."""
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _find_coordinator([7, 1])
    env.responders[ApiKey.OFFSET_FETCH] = _offsets
    assert env.admin.list_consumer_group_offsets("g", timeout=30) == {TP: OffsetAndMetadata(42, "")}
    assert [r.destination for r in env.sent(ApiKey.OFFSET_FETCH)] == ["1"]


def _group_described(r: SentRequest) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[DescribeGroupsResponse.DescribedGroup(
        group_id=g, group_state="Empty", protocol_type="consumer") for g in r.body.groups])


def _groups_deleted(r: SentRequest) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=[DeleteGroupsResponse.DeletableGroupResult(group_id=g)
                                         for g in r.body.groups_names])


def _committed(r: SentRequest) -> OffsetCommitResponse:
    _C = OffsetCommitResponse
    return _C(topics=[_C.OffsetCommitResponseTopic(name=t.name, partitions=[
        _C.OffsetCommitResponsePartition(partition_index=p.partition_index) for p in t.partitions])
        for t in r.body.topics])


def _offsets_deleted(r: SentRequest) -> OffsetDeleteResponse:
    _D = OffsetDeleteResponse
    return _D(topics=[_D.OffsetDeleteResponseTopic(name=t.name, partitions=[
        _D.OffsetDeleteResponsePartition(partition_index=p.partition_index) for p in t.partitions])
        for t in r.body.topics])


def _transactions_described(r: SentRequest) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(transaction_states=[DescribeTransactionsResponse.TransactionState(
        transactional_id=tid, transaction_state="Empty", transaction_timeout_ms=60_000,
        transaction_start_time_ms=-1, producer_id=7, producer_epoch=0) for tid in r.body.transactional_ids])


CALLS: dict[str, tuple[int, Callable[[SentRequest], Any], Callable[[Any], Any]]] = {
    "list_consumer_group_offsets": (ApiKey.OFFSET_FETCH, _offsets,
                                    lambda a: a.list_consumer_group_offsets("g", timeout=30)),
    "describe_consumer_groups": (ApiKey.DESCRIBE_GROUPS, _group_described,
                                 lambda a: a.describe_consumer_groups(["g"], timeout=30)),
    "delete_consumer_groups": (ApiKey.DELETE_GROUPS, _groups_deleted,
                               lambda a: a.delete_consumer_groups(["g"], timeout=30)),
    "alter_consumer_group_offsets": (ApiKey.OFFSET_COMMIT, _committed,
                                     lambda a: a.alter_consumer_group_offsets("g", {TP: 5}, timeout=30)),
    "delete_consumer_group_offsets": (ApiKey.OFFSET_DELETE, _offsets_deleted,
                                      lambda a: a.delete_consumer_group_offsets("g", [TP], timeout=30)),
    "list_share_group_offsets": (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, lambda r: _share_offsets("g", [(0, 9, 1, 4, 0)]),
                                 lambda a: a.list_share_group_offsets("g", [("t", 0)], timeout=30)),
    "delete_share_groups": (ApiKey.DELETE_GROUPS, _groups_deleted, lambda a: a.delete_share_groups(["g"], timeout=30)),
    "describe_transactions": (ApiKey.DESCRIBE_TRANSACTIONS, _transactions_described,
                              lambda a: a.describe_transactions(["tx"], timeout=30)),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_every_coordinator_bound_call_finds_the_successor_of_a_dead_coordinator(name: str) -> None:
    api_key, answer, call = CALLS[name]
    env = Env()
    dead = (BROKERS[0].host, BROKERS[0].port)
    env.responders[ApiKey.FIND_COORDINATOR] = _find_coordinator(lambda: 1 if dead in env.selector.refused else 0)
    env.responders[api_key] = _dies_when_asked(env, 0, answer)
    call(env.admin)
    assert [r.destination for r in env.sent(api_key)] == ["0", "1"]


def test_every_call_bound_to_a_coordinator_looks_it_up_again_when_it_is_unreachable() -> None:
    """The share-group calls and the others not scripted above use the same lookups: their targets move."""
    coordinator_bound = {name: lookup for name, kind in api_table.ADMIN_APIS.items()
                         if isinstance(lookup := getattr(kind, "lookup", None), Coordinators)}
    assert {"list_share_group_offsets", "alter_share_group_offsets", "delete_share_group_offsets",
            "describe_share_groups", "delete_share_groups", *CALLS} <= set(coordinator_bound)
    assert all(lookup.targets_move for lookup in coordinator_bound.values())


def test_the_timeout_names_the_call_the_group_the_coordinator_last_tried_and_the_last_error() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _find_coordinator([1])
    env.responders[ApiKey.OFFSET_FETCH] = lambda r: OffsetFetchResponse(
        groups=[OffsetFetchResponse.OffsetFetchResponseGroup(group_id="orders", error_code=NOT_COORDINATOR)])
    with pytest.raises(KafkaTimeoutError) as raised:
        env.admin.list_consumer_group_offsets("orders", timeout=2)
    text = str(raised.value)
    assert "OffsetFetch for 'orders'" in text and "group coordinator last tried: node 1" in text
    assert "last error: NotCoordinatorError" in text
    assert isinstance(raised.value.__cause__, NotCoordinatorError)


def test_the_timeout_of_a_dead_coordinator_names_the_lost_connection() -> None:
    env = Env()
    env.responders[ApiKey.FIND_COORDINATOR] = _find_coordinator([0])
    env.responders[ApiKey.OFFSET_FETCH] = _dies_when_asked(env, 0, _offsets)
    with pytest.raises(KafkaTimeoutError) as raised:
        env.admin.list_consumer_group_offsets("orders", timeout=2)
    text = str(raised.value)
    assert "OffsetFetch for 'orders'" in text and "group coordinator last tried: node 0" in text
    assert "last error: UnreachableTargetError" in text
    assert isinstance(raised.value.__cause__, DisconnectError)


def _listed(r: SentRequest) -> ListOffsetsResponse:
    _L = ListOffsetsResponse
    return _L(topics=[_L.ListOffsetsTopicResponse(name=t.name, partitions=[_L.ListOffsetsPartitionResponse(
        partition_index=p.partition_index, offset=40, timestamp=-1, leader_epoch=1) for p in t.partitions])
        for t in r.body.topics])


def test_a_partition_leader_that_dies_is_looked_up_again_in_fresh_metadata() -> None:
    """The same for the calls bound to a partition's leader (list_offsets, describe_producers, abort_transaction):
    the leader drops the connection with the ListOffsets in flight; the metadata still names it once (the
    connection is then refused), then names the new leader, which answers."""
    env = Env()
    dead = (BROKERS[0].host, BROKERS[0].port)
    refreshes: list[int] = []

    def metadata(r: SentRequest) -> Any:
        if dead in env.selector.refused:
            refreshes.append(1)
        leader = 1 if len(refreshes) > 1 else 0
        return metadata_response(BROKERS, {"t": 1}, leaders={("t", 0): leader})

    env.responders[ApiKey.METADATA] = metadata
    env.responders[ApiKey.LIST_OFFSETS] = _dies_when_asked(env, 0, _listed)
    out = env.admin.list_offsets({("t", 0): OffsetSpec.latest()}, timeout=30)
    assert out[TopicPartition("t", 0)].offset == 40
    assert [r.destination for r in env.sent(ApiKey.LIST_OFFSETS)] == ["0", "1"]

"""ReadShareGroupState (84), WriteShareGroupState (85), InitializeShareGroupState (83),
DeleteShareGroupState (86) and ReadShareGroupStateSummary (87; the group coordinator's, for
DescribeShareGroupOffsets: epochs, start offset and, v1, delivery-complete count), KIP-932: a share-partition leader reads and writes the state of its share partitions
at their share coordinator (:mod:`mini_broker.share.share_coordinator`; on a cluster the shard of the
``__share_group_state`` partition the key maps to, :mod:`mini_broker.cluster.share_state`). Per partition:
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (this broker does not serve that state partition now: look the
coordinator up again), FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, INVALID_REQUEST (an unknown record state). On a
cluster the answers wait for the ISR (the append gate). CLUSTER_ACTION on the cluster is needed (else
CLUSTER_AUTHORIZATION_FAILED): only brokers send them."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_code, error_message
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.share.share_coordinator import SharePartitionKey, ShareStateShards, state_batches
from mini_broker.share.share_partition import RecordState
from pykafka_client.errors import ClusterAuthorizationFailedError, CoordinatorNotAvailableError, InvalidRequestError
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)

P = TypeVar("P")


def _per_partition(apis: KafkaApis, request: Request, group_id: str, topics: Sequence[Any],
                   op: Callable[[ShareStateShards, SharePartitionKey, Any], P],
                   failed: Callable[[int, int, str | None], P]) -> list[tuple[uuid.UUID, list[P]]]:
    """``op(shards, key, partition data)`` for every partition of every topic of the request; a refusal or an
    error of the operation gives ``failed(partition, code, message)``."""
    shards = apis.broker.share_state
    refused: tuple[int, str] | None = None
    if not apis.broker.auth(request).cluster(AclOperation.CLUSTER_ACTION):
        refused = int(ClusterAuthorizationFailedError.code), "CLUSTER_ACTION on the cluster is needed: brokers ask"
    elif shards is None:
        refused = int(CoordinatorNotAvailableError.code), "this broker hosts no share coordinator"
    out: list[tuple[uuid.UUID, list[P]]] = []
    for topic in topics:
        parts: list[P] = []
        for p in topic.partitions:
            if refused is not None or shards is None:
                code, message = refused or (int(CoordinatorNotAvailableError.code), None)
                parts.append(failed(p.partition, code, message))
                continue
            try:
                parts.append(op(shards, (group_id, topic.topic_id, p.partition), p))
            except KafkaError as e:
                parts.append(failed(p.partition, error_code(e), error_message(e)))
            except ValueError as e:  # an unknown delivery state
                parts.append(failed(p.partition, int(InvalidRequestError.code), str(e)))
        out.append((topic.topic_id, parts))
    return out


def handle_read(apis: KafkaApis, request: Request) -> ReadShareGroupStateResponse:
    body = request.body
    assert isinstance(body, ReadShareGroupStateRequest)
    R = ReadShareGroupStateResponse

    def read(shards: ShareStateShards, key: SharePartitionKey,
             p: ReadShareGroupStateRequest.PartitionData) -> ReadShareGroupStateResponse.PartitionResult:
        found = shards.shard_for(key).read_state(key, p.leader_epoch)
        if found is None:  # never written (Kafka's uninitialized start offset)
            return R.PartitionResult(partition=p.partition, state_epoch=0, start_offset=-1)
        state_epoch, state = found
        return R.PartitionResult(partition=p.partition, state_epoch=state_epoch, start_offset=state.start_offset,
                                 state_batches=[R.StateBatch(first_offset=first, last_offset=last,
                                                             delivery_state=int(kind), delivery_count=count)
                                                for first, last, kind, count in state_batches(state)])

    results = _per_partition(apis, request, body.group_id, body.topics, read, lambda part, code, msg: R.PartitionResult(
        partition=part, error_code=code, error_message=msg, start_offset=-1))
    return R(results=[R.ReadStateResult(topic_id=t, partitions=ps) for t, ps in results])


def handle_read_summary(apis: KafkaApis, request: Request) -> ReadShareGroupStateSummaryResponse:
    body = request.body
    assert isinstance(body, ReadShareGroupStateSummaryRequest)
    R = ReadShareGroupStateSummaryResponse

    def read(shards: ShareStateShards, key: SharePartitionKey,
             p: ReadShareGroupStateSummaryRequest.PartitionData) -> ReadShareGroupStateSummaryResponse.PartitionResult:
        found = shards.shard_for(key).read_state_summary(key)
        if found is None:  # never written
            return R.PartitionResult(partition=p.partition, state_epoch=0, start_offset=-1)
        return R.PartitionResult(partition=p.partition, state_epoch=found.state_epoch,
                                 leader_epoch=found.leader_epoch, start_offset=found.start_offset,
                                 delivery_complete_count=found.delivery_complete_count)

    results = _per_partition(apis, request, body.group_id, body.topics, read, lambda part, code, msg: R.PartitionResult(
        partition=part, error_code=code, error_message=msg, start_offset=-1))
    return R(results=[R.ReadStateSummaryResult(topic_id=t, partitions=ps) for t, ps in results])


def _answer(apis: KafkaApis, request: Request, group_id: str, topics: Sequence[Any],
            op: Callable[[ShareStateShards, SharePartitionKey, Any], None], partition_result: Callable[..., P],
            topic_result: Callable[..., Any]) -> list[Any]:
    """The results of a write API whose partitions answer only an error: ``op`` per partition."""
    def done(shards: ShareStateShards, key: SharePartitionKey, p: Any) -> P:
        op(shards, key, p)
        return partition_result(partition=p.partition)

    results = _per_partition(apis, request, group_id, topics, done, lambda part, code, msg: partition_result(
        partition=part, error_code=code, error_message=msg))
    return [topic_result(topic_id=t, partitions=ps) for t, ps in results]


def handle_write(apis: KafkaApis, request: Request) -> WriteShareGroupStateResponse:
    body = request.body
    assert isinstance(body, WriteShareGroupStateRequest)
    R = WriteShareGroupStateResponse

    def write(shards: ShareStateShards, key: SharePartitionKey, p: WriteShareGroupStateRequest.PartitionData) -> None:
        batches = [(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
                   for b in p.state_batches]
        shards.shard_for(key).write_state(key, p.state_epoch, p.leader_epoch, p.start_offset, batches)

    return R(results=_answer(apis, request, body.group_id, body.topics, write, R.PartitionResult,
                             R.WriteStateResult))


def handle_initialize(apis: KafkaApis, request: Request) -> InitializeShareGroupStateResponse:
    body = request.body
    assert isinstance(body, InitializeShareGroupStateRequest)
    R = InitializeShareGroupStateResponse
    return R(results=_answer(apis, request, body.group_id, body.topics,
                             lambda shards, key, p: shards.shard_for(key).initialize_state(key, p.state_epoch,
                                                                                           p.start_offset),
                             R.PartitionResult, R.InitializeStateResult))


def handle_delete(apis: KafkaApis, request: Request) -> DeleteShareGroupStateResponse:
    body = request.body
    assert isinstance(body, DeleteShareGroupStateRequest)
    R = DeleteShareGroupStateResponse
    return R(results=_answer(apis, request, body.group_id, body.topics,
                             lambda shards, key, p: shards.shard_for(key).delete_state(key),
                             R.PartitionResult, R.DeleteStateResult))


READ_API = ApiSpec(ApiKey.READ_SHARE_GROUP_STATE, 0, 0, handle_read)
WRITE_API = ApiSpec(ApiKey.WRITE_SHARE_GROUP_STATE, 0, 0, handle_write)
INITIALIZE_API = ApiSpec(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, 0, handle_initialize)
DELETE_API = ApiSpec(ApiKey.DELETE_SHARE_GROUP_STATE, 0, 0, handle_delete)
READ_SUMMARY_API = ApiSpec(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1, handle_read_summary)

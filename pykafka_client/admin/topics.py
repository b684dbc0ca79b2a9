"""The AdminClient's topic calls (Java ``KafkaAdminClient.createTopics`` / ``deleteTopics`` /
``createPartitions`` / ``describeTopics`` / ``listTopics``): CreateTopics, DeleteTopics and CreatePartitions go to the
controller (any broker when none is known), the descriptions come from Metadata."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.types import (
    CreateTopicResult,
    NewPartitions,
    NewTopic,
    TopicDescription,
    TopicPartitionInfo,
)
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument, mapping_argument

_NOT_CONTROLLER = 41
_ZERO_UUID = uuid.UUID(int=0)


def create_topics(
    ctx: AdminContext, new_topics: Iterable[NewTopic], timeout: float | None = None, validate_only: bool = False,
) -> dict[str, CreateTopicResult]:
    topics = list_argument(
        "create_topics", "new_topics", new_topics, NewTopic,
        "a list of NewTopic, e.g. [NewTopic('orders', num_partitions=3, replication_factor=1)]",
    )
    if not topics:
        return {}
    with ctx.lock:
        timer = ctx.timer(timeout)

        def build(version: int) -> CreateTopicsRequest:
            return CreateTopicsRequest(
                topics=[
                    CreateTopicsRequest.CreatableTopic(
                        name=t.name,
                        num_partitions=t.num_partitions,
                        replication_factor=t.replication_factor,
                        assignments=[
                            CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
                            for p, b in (t.replica_assignments or {}).items()
                        ],
                        configs=[
                            CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()
                        ],
                    )
                    for t in topics
                ],
                timeout_ms=max(0, min(timer.remaining_ms(), 2**31 - 1)),
                validate_only=validate_only if version >= 1 else False,
            )

        while True:
            _, resp = ctx.send(ApiKey.CREATE_TOPICS, build, ctx.controller_or_any, timer)
            assert isinstance(resp, CreateTopicsResponse)
            if any(r.error_code == _NOT_CONTROLLER for r in resp.topics) and not timer.is_expired():
                ctx.refresh_metadata(timer, "controller")
                ctx.backoff(timer)
                continue
            break
        results: dict[str, CreateTopicResult] = {}
        first_error: BaseException | None = None
        for r in resp.topics:
            if r.error_code:
                first_error = first_error or broker_error(r.error_code, r.error_message, f"topic {r.name!r}")
                continue
            tid = r.topic_id if r.topic_id != _ZERO_UUID else None
            results[r.name] = CreateTopicResult(r.name, tid, r.num_partitions, r.replication_factor)
        ctx.metadata.request_update()
        if first_error is not None:
            raise first_error
        return results


def delete_topics(ctx: AdminContext, topics: Iterable[str], timeout: float | None = None) -> None:
    names = list_argument("delete_topics", "topics", topics, str, "a list of topic names, e.g. ['orders']")
    if not names:
        return
    with ctx.lock:
        timer = ctx.timer(timeout)

        def build(version: int) -> DeleteTopicsRequest:
            timeout_ms = max(0, min(timer.remaining_ms(), 2**31 - 1))
            if version >= 6:
                return DeleteTopicsRequest(
                    topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names], timeout_ms=timeout_ms
                )
            return DeleteTopicsRequest(topic_names=names, timeout_ms=timeout_ms)

        _, resp = ctx.send(ApiKey.DELETE_TOPICS, build, ctx.controller_or_any, timer)
        assert isinstance(resp, DeleteTopicsResponse)
        ctx.metadata.request_update()
        for r in resp.responses:
            if r.error_code:
                raise broker_error(r.error_code, r.error_message, f"topic {r.name!r}")


def create_partitions(
    ctx: AdminContext,
    new_partitions: Mapping[str, NewPartitions],
    timeout: float | None = None,
    validate_only: bool = False,
) -> None:
    mapping_argument(
        "create_partitions", "new_partitions", new_partitions,
        "a mapping of topic name to NewPartitions, e.g. {'orders': NewPartitions(6)}",
    )
    if not new_partitions:
        return
    with ctx.lock:
        timer = ctx.timer(timeout)

        def build(version: int) -> CreatePartitionsRequest:
            return CreatePartitionsRequest(
                topics=[
                    CreatePartitionsRequest.CreatePartitionsTopic(
                        name=name,
                        count=np.total_count,
                        assignments=None
                        if np.new_assignments is None
                        else [
                            CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=list(a))
                            for a in np.new_assignments
                        ],
                    )
                    for name, np in new_partitions.items()
                ],
                timeout_ms=max(0, min(timer.remaining_ms(), 2**31 - 1)),
                validate_only=validate_only,
            )

        _, resp = ctx.send(ApiKey.CREATE_PARTITIONS, build, ctx.controller_or_any, timer)
        assert isinstance(resp, CreatePartitionsResponse)
        ctx.metadata.request_update()
        for r in resp.results:
            if r.error_code:
                raise broker_error(r.error_code, r.error_message, f"topic {r.name!r}")


def describe_topics(
    ctx: AdminContext, topics: Iterable[str], timeout: float | None = None,
) -> dict[str, TopicDescription]:
    names = list_argument("describe_topics", "topics", topics, str, "a list of topic names, e.g. ['orders']")
    if not names:
        return {}
    with ctx.lock:
        timer = ctx.timer(timeout)
        _, resp = ctx.send(
            ApiKey.METADATA,
            lambda v: MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                allow_auto_topic_creation=False,
            ),
            ctx.least_loaded,
            timer,
        )
        assert isinstance(resp, MetadataResponse)
        brokers = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in resp.brokers}

        def node(i: int) -> Node:
            return brokers.get(i) or Node(i, "", -1)

        out: dict[str, TopicDescription] = {}
        first_error: BaseException | None = None
        for t in resp.topics:
            name = t.name or ""
            if t.error_code:
                first_error = first_error or broker_error(t.error_code, None, f"topic {name!r}")
                continue
            parts = [
                TopicPartitionInfo(
                    p.partition_index,
                    brokers.get(p.leader_id),
                    [node(i) for i in p.replica_nodes],
                    [node(i) for i in p.isr_nodes],
                    p.leader_epoch if p.leader_epoch >= 0 else None,
                )
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            ]
            tid = t.topic_id if t.topic_id != _ZERO_UUID else None
            out[name] = TopicDescription(name, tid, t.is_internal, parts)
        if first_error is not None:
            raise first_error
        return out


def list_topics(ctx: AdminContext, timeout: float | None = None) -> set[str]:
    with ctx.lock:
        timer = ctx.timer(timeout)
        _, resp = ctx.send(
            ApiKey.METADATA, lambda v: MetadataRequest(topics=None, allow_auto_topic_creation=False),
            ctx.least_loaded, timer,
        )
        assert isinstance(resp, MetadataResponse)
        return {t.name for t in resp.topics if t.name and not t.is_internal and not t.error_code}

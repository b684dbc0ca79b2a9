"""Metadata (key 3): brokers, cluster id, controller, topics with partitions, leaders and topic ids.

Requested topics that do not exist are created when ``auto.create.topics.enable`` is true and the request
allows it (v4+ ``allow_auto_topic_creation``; always for v0-3), with ``num.partitions`` partitions, and are
returned at once (the single broker creates them synchronously). Invalid names get INVALID_TOPIC_EXCEPTION.

Authorization as Kafka: the all-topics answer lists only the topics the principal may DESCRIBE; a named topic (or a
topic id) it may not describe answers TOPIC_AUTHORIZATION_FAILED whether it exists or not (an id without its name);
auto-creation needs CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED. Authorized operations
(v8+) are the principal's (KIP-430); the cluster's only with DESCRIBE on the cluster.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import ZERO_UUID, TopicMetadata, is_internal_topic, validate_topic_name
from pykafka_client.errors import (
    InvalidTopicError,
    LeaderNotAvailableError,
    ListenerNotFoundError,
    TopicAuthorizationFailedError,
    TopicExistsError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import KafkaError
from pykafka_client.protocol.acl import AclOperation, ResourceType
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import MetadataRequest, MetadataResponse

log = logging.getLogger(__name__)

AUTHORIZED_OPERATIONS_OMITTED = -2147483648

Topic = MetadataResponse.MetadataResponseTopic
Partition = MetadataResponse.MetadataResponsePartition


def topic_metadata(apis: KafkaApis, md: TopicMetadata, authorized_operations: int) -> Topic:
    replication = apis.broker.replica_manager.replication
    partitions = []
    for p in range(md.num_partitions):
        r = replication.partition_replicas(md, p)
        partitions.append(Partition(error_code=r.error_code, partition_index=p, leader_id=r.leader,
                                    leader_epoch=r.leader_epoch, replica_nodes=r.replicas, isr_nodes=r.isr,
                                    offline_replicas=r.offline))
    return Topic(error_code=0, name=md.name, topic_id=md.topic_id, is_internal=md.is_internal, partitions=partitions,
                 topic_authorized_operations=authorized_operations)


def _error_topic(name: str | None, code: int, topic_id: uuid.UUID = ZERO_UUID) -> Topic:
    return Topic(error_code=code, name=name, topic_id=topic_id, is_internal=False, partitions=[])


def handle(apis: KafkaApis, request: Request) -> MetadataResponse:
    body = request.body
    assert isinstance(body, MetadataRequest)
    version = request.context.api_version
    broker = apis.broker
    cache = broker.metadata_cache
    auth = broker.auth(request)
    include_ops = bool(body.include_topic_authorized_operations)

    def described(md: TopicMetadata) -> Topic:
        ops = auth.operations(ResourceType.TOPIC, md.name) if include_ops else AUTHORIZED_OPERATIONS_OMITTED
        return topic_metadata(apis, md, ops)

    topics: list[Topic] = []
    if body.topics is None or (version == 0 and not body.topics):
        topics = [described(md) for md in cache.all_topics() if auth.topic(AclOperation.DESCRIBE, md.name)]
    else:
        allow_create = broker.config.auto_create_topics_enable and (version < 4 or body.allow_auto_topic_creation)
        seen: set[str] = set()
        for t in body.topics:
            name = t.name
            if name is None:
                md_by_id = cache.topic_by_id(t.topic_id) if t.topic_id != ZERO_UUID else None
                if md_by_id is None:
                    topics.append(_error_topic(None, UnknownTopicIdError.code, t.topic_id))
                elif not auth.topic(AclOperation.DESCRIBE, md_by_id.name):
                    topics.append(_error_topic(None, TopicAuthorizationFailedError.code, t.topic_id))
                else:
                    topics.append(described(md_by_id))
                continue
            if name in seen:
                continue
            seen.add(name)
            if not auth.topic(AclOperation.DESCRIBE, name):
                topics.append(_error_topic(name, TopicAuthorizationFailedError.code))
                continue
            md = cache.get_topic(name)
            if md is None and allow_create and not is_internal_topic(name):
                if not (auth.cluster(AclOperation.CREATE) or auth.topic(AclOperation.CREATE, name)):
                    topics.append(_error_topic(name, TopicAuthorizationFailedError.code))
                    continue
                created = _auto_create(apis, name)
                if isinstance(created, int):
                    topics.append(_error_topic(name, created))
                    continue
                md = created
            if md is None:
                try:
                    validate_topic_name(name)
                    code = UnknownTopicOrPartitionError.code
                except InvalidTopicError:
                    code = InvalidTopicError.code
                topics.append(_error_topic(name, code))
            else:
                topics.append(described(md))
    listener = request.context.listener_name
    ep = broker.endpoint_for(listener)
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=broker.node_id, host=ep.host, port=ep.port, rack=None)]
    controller_id = broker.node_id
    live = broker.replica_manager.replication.live_brokers(listener)
    if live:
        brokers = [MetadataResponse.MetadataResponseBroker(node_id=i, host=h, port=p, rack=None) for i, h, p in live]
        controller_id = live[0][0]  # any live broker forwards controller requests
        hide_leaders_without_listener(topics, {i for i, _, _ in live}, broker.replica_manager.replication.broker_registered,
                                      version)
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=broker.metadata_cache.cluster_id,
        controller_id=controller_id,
        topics=topics,
        cluster_authorized_operations=auth.cluster_operations() if body.include_cluster_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED,
    )


def hide_leaders_without_listener(topics: list[Topic], reachable: set[int], registered: Callable[[int], bool],
                                  version: int) -> None:
    """A cluster's partition whose leader is not ``reachable`` (no endpoint on the request's listener) has no
    leader for this client (Kafka): LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before) when the leader is a
    ``registered`` broker, LEADER_NOT_AVAILABLE when it is not."""
    for topic in topics:
        for part in topic.partitions:
            if part.leader_id < 0 or part.leader_id in reachable:
                continue
            part.error_code = (ListenerNotFoundError.code if registered(part.leader_id) and version >= 6
                               else LeaderNotAvailableError.code)
            part.leader_id = -1


def _auto_create(apis: KafkaApis, name: str) -> TopicMetadata | int:
    broker = apis.broker
    try:
        md = broker.replica_manager.create_topic(name, broker.config.num_partitions, {})
        log.info("event=topic_auto_created topic=%s partitions=%d", name, md.num_partitions)
        return md
    except TopicExistsError:
        existing = broker.metadata_cache.get_topic(name)
        return existing if existing is not None else UnknownTopicOrPartitionError.code
    except KafkaError as e:
        return int(getattr(e, "code", UnknownTopicOrPartitionError.code))


API = ApiSpec(ApiKey.METADATA, 0, 12, handle)

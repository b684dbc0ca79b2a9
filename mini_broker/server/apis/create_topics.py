"""CreateTopics (key 19).

Per topic, in Kafka's order: duplicate names in one request -> INVALID_REQUEST; invalid name ->
INVALID_TOPIC_EXCEPTION; already exists -> TOPIC_ALREADY_EXISTS; partitions (-1 = ``num.partitions``)
must be > 0 -> INVALID_PARTITIONS; replication factor (-1 = ``default.replication.factor``) must be 1 on a
single broker -> INVALID_REPLICATION_FACTOR; manual assignments must name only this broker ->
INVALID_REPLICA_ASSIGNMENT; configs must be known topic configs with valid values -> INVALID_CONFIG. Authorization first, as Kafka: CREATE on
the cluster, else CREATE on the topic (TOPIC_AUTHORIZATION_FAILED); the v5+ configs of a created topic only with
DESCRIBE_CONFIGS on it (else an empty list and topic_config_error_code TOPIC_AUTHORIZATION_FAILED).
``validate_only`` checks everything and creates nothing. v5+ results carry the partition count,
replication factor and the topic's configs with their sources.
"""

from __future__ import annotations

import logging
from collections import Counter

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_message
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import TopicMetadata, validate_topic_name
from mini_broker.server.replication_strategy import TopicCreation
from mini_broker.server.topic_configs import describe_topic_configs, validate_topic_configs
from pykafka_client.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
    TopicExistsError,
    UnknownServerError,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import CreateTopicsRequest, CreateTopicsResponse

log = logging.getLogger(__name__)

Result = CreateTopicsResponse.CreatableTopicResult


def _check(apis: KafkaApis, t: CreateTopicsRequest.CreatableTopic) -> TopicCreation:
    """Validate one topic or raise a BrokerResponseError. On a cluster the replication factor and manual
    assignments are checked against the registered brokers by the controller."""
    broker = apis.broker
    validate_topic_name(t.name)
    if broker.metadata_cache.get_topic(t.name) is not None:
        raise TopicExistsError(f"Topic '{t.name}' already exists.")
    node = broker.node_id
    refused = broker.replica_manager.replication.manual_assignment_error
    rf = 1
    if t.assignments and refused is not None:
        raise refused
    if t.assignments:
        if t.num_partitions != -1 or t.replication_factor != -1:
            raise InvalidRequestError("Both numPartitions or replicationFactor and replicasAssignments were set. "
                                      "Both cannot be used at the same time.")
        indexes = sorted(a.partition_index for a in t.assignments)
        if indexes != list(range(len(indexes))):
            raise InvalidReplicaAssignmentError("Partitions should be a consecutive 0-based integer sequence")
        replication = broker.replica_manager.replication
        for a in t.assignments:
            if not replication.validates_assignments and list(a.broker_ids) != [node]:
                raise InvalidReplicaAssignmentError(
                    f"The manual partition assignment includes broker(s) other than the only broker {node}: "
                    f"{list(a.broker_ids)}")
        partitions = len(t.assignments)
        assignment: list[list[int]] | None = [
            list(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)]
        rf = len(assignment[0]) if assignment else 1
    else:
        assignment = None
        partitions = broker.config.num_partitions if t.num_partitions == -1 else t.num_partitions
        rf = broker.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
        if partitions <= 0:
            raise InvalidPartitionsError("Number of partitions was set to an invalid non-positive value.")
        if rf <= 0:
            raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
        broker.replica_manager.replication.check_replication_factor(rf)
    configs = validate_topic_configs({c.name: c.value for c in t.configs})
    return TopicCreation(t.name, partitions, rf, configs, assignment)


def handle(apis: KafkaApis, request: Request) -> CreateTopicsResponse:
    body = request.body
    assert isinstance(body, CreateTopicsRequest)
    broker = apis.broker
    counts = Counter(t.name for t in body.topics)
    auth = broker.auth(request)
    creatable = ({t.name for t in body.topics} if auth.cluster(AclOperation.CREATE)
                 else auth.topics(AclOperation.CREATE, (t.name for t in body.topics)))
    refused: dict[str, Result] = {}
    valid: list[TopicCreation] = []
    for t in body.topics:
        if counts[t.name] > 1:
            refused[t.name] = Result(name=t.name, error_code=InvalidRequestError.code,
                                     error_message="Create topics request from client contains multiple entries "
                                                   "for the same topic.")
            continue
        if t.name not in creatable:
            refused[t.name] = Result(name=t.name, error_code=TopicAuthorizationFailedError.code,
                                     error_message="Authorization failed: CREATE on the cluster or on the topic is "
                                                   "needed")
            continue
        try:
            valid.append(_check(apis, t))
        except BrokerResponseError as e:
            refused[t.name] = Result(name=t.name, error_code=e.code, error_message=error_message(e))
    created: dict[str, TopicMetadata | KafkaError] = {}
    if body.validate_only:
        for spec in valid:
            try:
                created[spec.name] = broker.metadata_cache.create_topic(spec.name, spec.num_partitions, spec.configs,
                                                                        validate_only=True)
            except BrokerResponseError as e:
                created[spec.name] = e
    elif valid:
        # one request to the replication strategy: a cluster's controller makes it one metadata change
        created = broker.replica_manager.create_topics(valid)
    rfs = {spec.name: spec.replication_factor for spec in valid}
    results: list[Result] = []
    for t in body.topics:
        if t.name in refused:
            results.append(refused[t.name])
            continue
        md = created[t.name]
        if isinstance(md, KafkaError):
            code = getattr(md, "code", UnknownServerError.code)
            results.append(Result(name=t.name, error_code=code, error_message=str(md) or None))
            continue
        if not body.validate_only:
            log.info("event=topic_created topic=%s partitions=%d configs=%s", t.name, md.num_partitions, md.configs)
        # the configs in the answer are shown only with DESCRIBE_CONFIGS on the topic (Kafka)
        shown = auth.topic(AclOperation.DESCRIBE_CONFIGS, t.name)
        described = describe_topic_configs(broker.config, md.configs) if shown else []
        results.append(Result(
            name=t.name, topic_id=md.topic_id, error_code=0,
            error_message=None, num_partitions=md.num_partitions, replication_factor=rfs[t.name],
            topic_config_error_code=0 if shown else TopicAuthorizationFailedError.code,
            configs=[CreateTopicsResponse.CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only,
                                                                config_source=e.source, is_sensitive=e.is_sensitive)
                     for e in described],
        ))
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


API = ApiSpec(ApiKey.CREATE_TOPICS, 2, 7, handle)

"""CreatePartitions (key 37): raise a topic's partition count.

Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one -> INVALID_PARTITIONS;
assignments whose number differs from the partitions added, or that name another broker ->
INVALID_REPLICA_ASSIGNMENT; the same topic twice -> INVALID_REQUEST. ALTER on the topic is needed (else
TOPIC_AUTHORIZATION_FAILED, before the topic's existence is looked at). ``validate_only`` changes nothing.
"""

from __future__ import annotations

import logging
from collections import Counter

from mini_broker.network.request_channel import Request
from mini_broker.server.api_error import error_message
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse

log = logging.getLogger(__name__)

Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def _one(apis: KafkaApis, t: CreatePartitionsRequest.CreatePartitionsTopic, validate_only: bool) -> None:
    broker = apis.broker
    md = broker.metadata_cache.get_topic(t.name)
    if md is None:
        raise UnknownTopicOrPartitionError(f"The topic '{t.name}' does not exist.")
    if t.count <= md.num_partitions:
        raise InvalidPartitionsError(f"Topic currently has {md.num_partitions} partitions, which is higher than or "
                                     f"equal to the requested {t.count}.")
    if t.assignments is not None:
        added = t.count - md.num_partitions
        if len(t.assignments) != added:
            raise InvalidReplicaAssignmentError(f"Attempted to add {added} additional partition(s), but only "
                                                f"{len(t.assignments)} assignment(s) were specified.")
        for a in t.assignments:
            if list(a.broker_ids) != [broker.node_id]:
                raise InvalidReplicaAssignmentError(f"Unknown broker(s) in replica assignment: {list(a.broker_ids)}.")
    if validate_only:
        broker.metadata_cache.set_partition_count(t.name, t.count, validate_only=True)
    else:
        broker.replica_manager.add_partitions(t.name, t.count)
        log.info("event=partitions_created topic=%s count=%d", t.name, t.count)


def handle(apis: KafkaApis, request: Request) -> CreatePartitionsResponse:
    body = request.body
    assert isinstance(body, CreatePartitionsRequest)
    counts = Counter(t.name for t in body.topics)
    alterable = apis.broker.auth(request).topics(AclOperation.ALTER, counts)
    results: list[Result] = []
    for t in body.topics:
        if counts[t.name] > 1:
            results.append(Result(name=t.name, error_code=InvalidRequestError.code,
                                  error_message="Duplicate topic in request."))
            continue
        if t.name not in alterable:
            results.append(Result(name=t.name, error_code=TopicAuthorizationFailedError.code,
                                  error_message="Authorization failed: ALTER on the topic is needed"))
            continue
        try:
            _one(apis, t, body.validate_only)
            results.append(Result(name=t.name, error_code=0, error_message=None))
        except BrokerResponseError as e:
            results.append(Result(name=t.name, error_code=e.code, error_message=error_message(e)))
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)


API = ApiSpec(ApiKey.CREATE_PARTITIONS, 0, 3, handle)

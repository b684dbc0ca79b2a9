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
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError, KafkaError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse

log = logging.getLogger(__name__)

Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def _check(apis: KafkaApis, t: CreatePartitionsRequest.CreatePartitionsTopic) -> list[list[int]] | None:
    """Validate one topic's growth (raises a BrokerResponseError); returns its manual assignment or None."""
    broker = apis.broker
    md = broker.metadata_cache.get_topic(t.name)
    if md is None:
        raise UnknownTopicOrPartitionError(f"The topic '{t.name}' does not exist.")
    if t.count <= md.num_partitions:
        raise InvalidPartitionsError(f"Topic currently has {md.num_partitions} partitions, which is higher than or "
                                     f"equal to the requested {t.count}.")
    if t.assignments is None:
        return None
    added = t.count - md.num_partitions
    if len(t.assignments) != added:
        raise InvalidReplicaAssignmentError(f"Attempted to add {added} additional partition(s), but only "
                                            f"{len(t.assignments)} assignment(s) were specified.")
    for a in t.assignments:
        # a cluster's controller checks them against the registered brokers
        if not broker.replica_manager.replication.validates_assignments and list(a.broker_ids) != [broker.node_id]:
            raise InvalidReplicaAssignmentError(f"Unknown broker(s) in replica assignment: {list(a.broker_ids)}.")
    return [list(a.broker_ids) for a in t.assignments]


def handle(apis: KafkaApis, request: Request) -> CreatePartitionsResponse:
    body = request.body
    assert isinstance(body, CreatePartitionsRequest)
    counts = Counter(t.name for t in body.topics)
    alterable = apis.broker.auth(request).topics(AclOperation.ALTER, counts)
    errors: dict[str, BrokerResponseError | KafkaError | None] = {}
    growth: list[tuple[str, int, list[list[int]] | None]] = []
    for t in body.topics:
        if counts[t.name] > 1:
            errors[t.name] = InvalidRequestError("Duplicate topic in request.")
        elif t.name not in alterable:
            errors[t.name] = TopicAuthorizationFailedError("Authorization failed: ALTER on the topic is needed")
        else:
            try:
                assignment = _check(apis, t)
                if body.validate_only:
                    apis.broker.metadata_cache.set_partition_count(t.name, t.count, validate_only=True)
                else:
                    growth.append((t.name, t.count, assignment))
                errors[t.name] = None
            except BrokerResponseError as e:
                errors[t.name] = e
    if growth:
        # one request to the replication strategy: a cluster's controller makes it one metadata change
        for name, err in apis.broker.replica_manager.add_partitions_batch(growth).items():
            errors[name] = err
            if err is None:
                log.info("event=partitions_created topic=%s", name)
    results: list[Result] = []
    for t in body.topics:
        err = errors[t.name]
        if err is None:
            results.append(Result(name=t.name, error_code=0, error_message=None))
        elif isinstance(err, BrokerResponseError):
            results.append(Result(name=t.name, error_code=err.code, error_message=error_message(err)))
        else:
            results.append(Result(name=t.name, error_code=UnknownServerError.code, error_message=str(err)))
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)


API = ApiSpec(ApiKey.CREATE_PARTITIONS, 0, 3, handle)

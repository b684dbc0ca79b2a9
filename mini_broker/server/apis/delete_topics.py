"""DeleteTopics (key 20): by name (v0-5) or by name or topic id (v6). Deletes the topic's logs.

``delete.topic.enable=false`` -> TOPIC_DELETION_DISABLED; unknown name -> UNKNOWN_TOPIC_OR_PARTITION;
unknown id -> UNKNOWN_TOPIC_ID. Authorization as Kafka: DESCRIBE and DELETE on the topic, else
TOPIC_AUTHORIZATION_FAILED (for a name the principal may not describe, whether the topic exists or not).
"""

from __future__ import annotations

import logging
import uuid

from mini_broker.network.request_channel import Request
from mini_broker.security.auth_helper import RequestAuth
from mini_broker.server.api_error import error_message
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.server.metadata_cache import ZERO_UUID, TopicMetadata
from pykafka_client.errors import (
    InvalidRequestError,
    TopicAuthorizationFailedError,
    TopicDeletionDisabledError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse

log = logging.getLogger(__name__)

Result = DeleteTopicsResponse.DeletableTopicResult


def handle(apis: KafkaApis, request: Request) -> DeleteTopicsResponse:
    body = request.body
    assert isinstance(body, DeleteTopicsRequest)
    broker = apis.broker
    version = request.context.api_version
    wanted: list[tuple[str | None, uuid.UUID]] = (
        [(t.name, t.topic_id) for t in body.topics] if version >= 6 else [(n, ZERO_UUID) for n in body.topic_names]
    )
    auth = broker.auth(request)
    checked: list[tuple[TopicMetadata | None, str | None, uuid.UUID, BrokerResponseError | None]] = []
    for name, topic_id in wanted:
        md = None
        if name is not None:
            md = broker.metadata_cache.get_topic(name)
            err: BrokerResponseError | None = None if md else UnknownTopicOrPartitionError(
                "This server does not host this topic-partition.")
            if name is not None and topic_id != ZERO_UUID:
                err = InvalidRequestError("Both topic name and topic id were provided")
        else:
            md = broker.metadata_cache.topic_by_id(topic_id) if topic_id != ZERO_UUID else None
            err = None if md else UnknownTopicIdError("This server does not host this topic ID.")
        err, name, topic_id = _authorize(auth, err, md.name if md else name, name, topic_id)
        if isinstance(err, TopicAuthorizationFailedError):
            md = None  # shows only what the request named
        if err is None and not broker.config.delete_topic_enable:
            err = TopicDeletionDisabledError("Topic deletion is disabled.")
        checked.append((md, name, topic_id, err))
    # one request to the replication strategy: a cluster's controller makes it one metadata change
    doomed = list(dict.fromkeys(md.name for md, _, _, err in checked if err is None and md is not None))
    deleted = broker.replica_manager.delete_topics(doomed) if doomed else {}
    results: list[Result] = []
    for md, name, topic_id, err in checked:
        if err is None and md is not None:
            failed = deleted.get(md.name)
            if isinstance(failed, BrokerResponseError):
                err = failed
            else:
                log.info("event=topic_deleted topic=%s topic_id=%s", md.name, md.topic_id)
        results.append(Result(
            name=md.name if md else name, topic_id=md.topic_id if md else topic_id,
            error_code=err.code if err else 0, error_message=error_message(err) if err else None,
        ))
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


def _authorize(auth: RequestAuth, err: BrokerResponseError | None, resolved: str | None, name: str | None,
               topic_id: uuid.UUID) -> tuple[BrokerResponseError | None, str | None, uuid.UUID]:
    """Kafka's checks (DESCRIBE, then DELETE on the topic) and what the result may show: a named topic the
    principal may not describe, or describe but not delete, fails with TOPIC_AUTHORIZATION_FAILED whether it exists
    or not; a topic id of a topic it may not describe answers TOPIC_AUTHORIZATION_FAILED without the name or the id."""
    if resolved is None or (err is not None and name is None):
        return err, name, topic_id
    if not auth.topic(AclOperation.DESCRIBE, resolved):
        denied = TopicAuthorizationFailedError("Authorization failed: DESCRIBE and DELETE on the topic are needed")
        return (denied, name, topic_id) if name is not None else (denied, None, ZERO_UUID)
    if (err is None or isinstance(err, UnknownTopicOrPartitionError)) and not auth.topic(AclOperation.DELETE, resolved):
        # a topic the principal may describe is shown by name, also when it was asked for by id
        return TopicAuthorizationFailedError("Authorization failed: DELETE on the topic is needed"), resolved, topic_id
    return err, name, topic_id


API = ApiSpec(ApiKey.DELETE_TOPICS, 1, 6, handle)

"""Blocking topic-metadata look-ups for ``partitions_for`` and ``list_topics`` (Java: TopicMetadataFetcher).

Each look-up sends its own MetadataRequest to the least loaded node, outside the cached
:class:`~pykafka_client.network.metadata.Metadata`, and retries until ``timer`` expires only while the
answer is retriable. Per-topic answers, as in Java:

* UNKNOWN_TOPIC_OR_PARTITION: the topic is left out of the result (``partitions_for`` answers an empty
  list after one round trip; nothing waits for a topic that does not exist);
* TOPIC_AUTHORIZATION_FAILED: raises TopicAuthorizationFailedError naming every such topic;
* INVALID_TOPIC_EXCEPTION and any other non-retriable error: raises that error;
* a retriable error (LEADER_NOT_AVAILABLE while a topic is being created, ...): retry after
  ``retry.backoff.ms``.
"""

from __future__ import annotations

import logging

from pykafka_client.consumer.client_adapter import ConsumerClient, timeout_error
from pykafka_client.errors import (
    NoError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    for_code,
)
from pykafka_client.network.cluster import PartitionInfo
from pykafka_client.network.metadata import oldest_metadata_version
from pykafka_client.protocol.messages.metadata_request import MetadataRequest
from pykafka_client.protocol.messages.metadata_response import MetadataResponse
from pykafka_client.structs import Node
from pykafka_client.utils.time import Timer

log = logging.getLogger(__name__)

TopicPartitions = dict[str, list[PartitionInfo]]


class TopicMetadataFetcher:
    def __init__(self, client: ConsumerClient, retry_backoff_ms: int, *, exclude_internal_topics: bool = True) -> None:
        self.client = client
        self.retry_backoff_ms = retry_backoff_ms
        self.exclude_internal_topics = exclude_internal_topics

    def get_topic_metadata(
        self, topic: str, allow_auto_topic_creation: bool, timer: Timer
    ) -> list[PartitionInfo] | None:
        """The partitions of ``topic``, or None when the cluster does not know it."""
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
            allow_auto_topic_creation=allow_auto_topic_creation,
        )
        return self._get_topic_metadata(request, timer).get(topic)

    def get_all_topic_metadata(self, timer: Timer) -> TopicPartitions:
        """Every topic the user may describe (internal topics only if ``exclude.internal.topics`` is off)."""
        return self._get_topic_metadata(MetadataRequest(topics=None, allow_auto_topic_creation=False), timer)

    def _get_topic_metadata(self, request: MetadataRequest, timer: Timer) -> TopicPartitions:
        while True:
            node = self.client.least_loaded_node()
            if node is None:
                self.client.await_metadata_update(timer)
            else:
                future = self.client.send(node, request, oldest_allowed_version=oldest_metadata_version(request))
                self.client.poll_future(future, timer)
                if future.failed() and not future.is_retriable():
                    raise future.exception()
                if future.succeeded():
                    body = future.value().response_body
                    if isinstance(body, MetadataResponse):
                        parsed = self._parse(body)
                        if parsed is not None:
                            return parsed
            timer.update()
            if timer.is_expired():
                raise timeout_error(
                    self.client,
                    f"timeout of {timer.timeout_ms()}ms expired while fetching topic metadata",
                    "check that the brokers in bootstrap.servers are reachable, or pass a longer timeout",
                )
            timer.sleep(self.retry_backoff_ms)

    def _parse(self, body: MetadataResponse) -> TopicPartitions | None:
        """The topics of a usable answer, or None when a retriable error asks for another round."""
        unauthorized = sorted(
            t.name
            for t in body.topics
            if t.name is not None and for_code(t.error_code) is TopicAuthorizationFailedError
        )
        if unauthorized:
            raise TopicAuthorizationFailedError(
                f"not authorized to describe topics {unauthorized}: grant DESCRIBE on them (ACLs) or use other topics"
            )
        should_retry = False
        brokers = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in body.brokers}
        out: TopicPartitions = {}
        for t in body.topics:
            if t.name is None:
                continue
            error = for_code(t.error_code)
            if error is UnknownTopicOrPartitionError:
                continue  # absent from the result, as in Java
            if error is not NoError:
                if error.retriable:
                    log.debug("topic metadata for %s has retriable error %s: retrying", t.name, error.name)
                    should_retry = True
                    continue
                raise error(f"while fetching metadata for topic {t.name!r}")
            if self.exclude_internal_topics and t.is_internal:
                continue
            out[t.name] = [
                PartitionInfo(
                    t.name,
                    p.partition_index,
                    brokers.get(p.leader_id),
                    p.leader_epoch if p.leader_epoch >= 0 else None,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    tuple(p.offline_replicas),
                    p.error_code,
                )
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            ]
        return None if should_retry else out

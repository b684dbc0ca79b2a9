"""Builders for the responses tests feed to MockSelector / MockClient (Java: ``RequestTestUtils``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from pykafka_client.protocol.api_keys import CLIENT_SUPPORTED_VERSIONS, ApiKey
from pykafka_client.protocol.messages import ApiVersionsResponse, MetadataResponse
from pykafka_client.structs import Node


def api_versions_response(
    overrides: Mapping[int, tuple[int, int] | None] | None = None,
    error_code: int = 0,
    throttle_time_ms: int = 0,
) -> ApiVersionsResponse:
    """Every API at the client's full range, except ``overrides`` (``None`` removes a key)."""
    versions: dict[int, tuple[int, int] | None] = {int(k): v for k, v in CLIENT_SUPPORTED_VERSIONS.items()}
    versions.update({int(k): v for k, v in (overrides or {}).items()})
    keys = [
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=v[0], max_version=v[1])
        for k, v in sorted(versions.items())
        if v is not None
    ]
    return ApiVersionsResponse(error_code=error_code, api_keys=keys, throttle_time_ms=throttle_time_ms)


def nodes(n: int, host: str = "localhost", base_port: int = 9092) -> list[Node]:
    return [Node(i, host, base_port + i) for i in range(n)]


def metadata_response(
    brokers: list[Node],
    topics: Mapping[str, int] | None = None,
    *,
    leader_epoch: int = 0,
    leaders: Mapping[tuple[str, int], int] | None = None,
    epochs: Mapping[tuple[str, int], int] | None = None,
    topic_errors: Mapping[str, int] | None = None,
    cluster_id: str | None = "test-cluster",
    controller_id: int | None = None,
    topic_ids: Mapping[str, uuid.UUID] | None = None,
) -> MetadataResponse:
    """A metadata response: ``topics`` maps name -> partition count; leaders round-robin over ``brokers``
    unless given; ``topic_errors`` adds error-only topics."""
    out_topics: list[MetadataResponse.MetadataResponseTopic] = []
    for name, count in (topics or {}).items():
        parts = []
        for p in range(count):
            leader = (leaders or {}).get((name, p), brokers[p % len(brokers)].id if brokers else -1)
            parts.append(
                MetadataResponse.MetadataResponsePartition(
                    error_code=0,
                    partition_index=p,
                    leader_id=leader,
                    leader_epoch=(epochs or {}).get((name, p), leader_epoch),
                    replica_nodes=[b.id for b in brokers],
                    isr_nodes=[b.id for b in brokers],
                )
            )
        tid = (topic_ids or {}).get(name) or uuid.uuid5(uuid.NAMESPACE_DNS, name)
        out_topics.append(MetadataResponse.MetadataResponseTopic(error_code=0, name=name, topic_id=tid, partitions=parts))
    for name, code in (topic_errors or {}).items():
        out_topics.append(MetadataResponse.MetadataResponseTopic(error_code=code, name=name))
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=b.id, host=b.host, port=b.port) for b in brokers],
        cluster_id=cluster_id,
        controller_id=brokers[0].id if controller_id is None and brokers else (controller_id or -1),
        topics=out_topics,
    )


__all__ = ["ApiKey", "api_versions_response", "metadata_response", "nodes"]

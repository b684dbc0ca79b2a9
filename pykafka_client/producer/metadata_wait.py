"""What ``send()`` / ``partitions_for()`` say when ``max.block.ms`` passes without the topic's metadata.

Java's text (``Topic t not present in metadata after 60000 ms.``) leads, followed by the reason when one is
known: no broker could be reached (each address tried with its last connection error), or the broker
answered that the topic does not exist (UNKNOWN_TOPIC_OR_PARTITION: it does not create topics on first use),
with how to create it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pykafka_client.errors import UnknownTopicOrPartitionError
from pykafka_client.network.metadata import Metadata
from pykafka_client.network.network_client import NetworkClient


def create_topic_hint(topic: str, bootstrap_servers: str | Sequence[str]) -> str:
    """How to create ``topic``: the CLI command and the AdminClient call."""
    servers = bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(bootstrap_servers)
    return (
        f"create it first with `pykafka topics create {topic} --partitions N --bootstrap-server {servers}`"
        f" or AdminClient.create_topics([NewTopic({topic!r}, N, replication_factor)])"
    )


def topic_not_present_message(
    topic: str, max_wait_ms: int, metadata: Metadata, client: NetworkClient, bootstrap_servers: str | Sequence[str]
) -> str:
    text = f"Topic {topic} not present in metadata after {max_wait_ms} ms"
    unreachable = client.unreachable_reason()
    if unreachable is not None:
        return f"{text}: {unreachable}."
    if metadata.topic_error(topic) is UnknownTopicOrPartitionError:
        return (
            f"{text}: the topic does not exist (the broker answered UNKNOWN_TOPIC_OR_PARTITION and did not create"
            f" it: its auto.create.topics.enable is false); {create_topic_hint(topic, bootstrap_servers)}."
        )
    return f"{text}."

"""How the consumer builds its network layer (Java ``ConsumerUtils.createConsumerNetworkClient`` with the
consumer's metadata): a ConsumerMetadata serving the subscriptions, the NetworkClient built from the shared
connection and security keys, and the ConsumerNetworkClient the fetcher and coordinator send through."""

from __future__ import annotations

from pykafka_client.client_utils import create_network_client
from pykafka_client.config import AbstractConfig
from pykafka_client.consumer.consumer_metadata import ConsumerMetadata
from pykafka_client.consumer.subscription_state import SubscriptionState
from pykafka_client.network.consumer_network_client import ConsumerNetworkClient
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.utils.time import Time

#: Java's consumer allows 100 in-flight requests per connection.
MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION = 100


def create_consumer_network_client(
    cfg: AbstractConfig, subscriptions: SubscriptionState, client_id: str, time: Time
) -> tuple[ConsumerMetadata, NetworkClient, ConsumerNetworkClient]:
    """(metadata, NetworkClient, ConsumerNetworkClient) of a consumer configured by ``cfg``."""
    metadata = ConsumerMetadata(
        subscriptions,
        cfg["retry.backoff.ms"],
        cfg["retry.backoff.max.ms"],
        cfg["metadata.max.age.ms"],
        allow_auto_topic_creation=cfg["allow.auto.create.topics"],
        include_internal_topics=not cfg["exclude.internal.topics"],
    )
    network_client = create_network_client(
        cfg, metadata, client_id=client_id, max_in_flight_requests_per_connection=MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
        time=time,
    )
    client = ConsumerNetworkClient(
        network_client, metadata, time, cfg["retry.backoff.ms"], cfg["request.timeout.ms"]
    )
    return metadata, network_client, client

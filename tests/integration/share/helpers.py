"""What the share-group client tests share: a one-partition topic and records produced to it."""

from __future__ import annotations

import uuid

from mini_broker.broker import MiniBroker
from pykafka_client import KafkaProducer
from pykafka_client.admin import AdminClient, NewTopic


def create_share_topic(broker: MiniBroker) -> str:
    """A new one-partition topic's name."""
    name = f"share-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(name, 1, 1)])
    return name


def produce(broker: MiniBroker, topic: str, values: list[str], *, batch_each: bool = False) -> None:
    """``values`` to partition 0; ``batch_each``: one batch per record (the broker acquires whole batches)."""
    with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}) as p:
        for v in values:
            p.send(topic, value=v.encode(), partition=0)
            if batch_each:
                p.flush()
        p.flush()

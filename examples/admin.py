"""Administer a cluster with AdminClient: topics, partitions, configs, offsets, and the errors you can expect.

    .venv/bin/python examples/admin.py                          # against a local mini_broker process
    .venv/bin/python examples/admin.py --bootstrap host:9092    # against a running cluster

Every call is synchronous and takes ``timeout`` in seconds (default ``default.api.timeout.ms``); broker
errors raise their own class from ``pykafka_client.errors``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # `python examples/x.py` too: the checkout holds `examples`

from examples.local_broker import bootstrap_servers
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic, OffsetSpec
from pykafka_client.errors import TopicExistsError, UnknownTopicOrPartitionError

TOPIC = "example-admin"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", help="host:port of a Kafka broker (default: start a mini_broker)")
    args = ap.parse_args(argv)

    with bootstrap_servers(args.bootstrap) as servers, AdminClient({"bootstrap.servers": servers}) as admin:
        cluster = admin.describe_cluster(timeout=10)
        print(f"cluster {cluster.cluster_id}: brokers {[f'{n.host}:{n.port}' for n in cluster.nodes]}")

        admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1,
                                      configs={"retention.ms": "3600000"})])
        print(f"created {TOPIC}; topics now: {sorted(admin.list_topics())}")
        try:
            admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
        except TopicExistsError as e:
            print(f"creating it again raises {type(e).__name__}")

        admin.create_partitions({TOPIC: NewPartitions(total_count=4)})
        description = admin.describe_topics([TOPIC])[TOPIC]
        print(f"{TOPIC} has partitions {[p.partition for p in description.partitions]} "
              f"(leaders {[p.leader.id if p.leader else None for p in description.partitions]})")

        resource = ConfigResource(ConfigResourceType.TOPIC, TOPIC)
        entries = admin.describe_configs([resource])[resource]
        retention = entries["retention.ms"]
        print(f"retention.ms = {retention.value} (source {retention.source.name})")

        with KafkaProducer({"bootstrap.servers": servers}) as producer:
            for i in range(10):
                producer.send(TOPIC, b"value %d" % i, partition=i % 2)
        offsets = admin.list_offsets({(TOPIC, p): OffsetSpec.latest() for p in range(4)})
        print(f"end offsets: {dict(sorted((tp[1], info.offset) for tp, info in offsets.items()))}")

        try:
            admin.list_offsets({("no-such-topic", 0): OffsetSpec.latest()})
        except UnknownTopicOrPartitionError as e:
            print(f"offsets of a missing topic raise {type(e).__name__} at once: {e}")

        admin.delete_topics([TOPIC])
        deleted = TOPIC not in admin.list_topics()
        print(f"deleted {TOPIC}: {deleted}")
    return 0 if deleted else 1


if __name__ == "__main__":
    raise SystemExit(main())

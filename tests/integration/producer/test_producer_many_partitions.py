"""Our producer against a topic with thousands of partitions (issue #5): every record lands once, in order."""

from __future__ import annotations

from collections import defaultdict

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client import AdminClient, KafkaProducer
from pykafka_client.admin import NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PARTITIONS = 2000
PER_PARTITION = 3


def test_thousands_of_partitions_every_record_once_in_order() -> None:
    with MiniBroker() as broker:
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("wide", num_partitions=PARTITIONS, replication_factor=1)], timeout=60.0)
        with KafkaProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20}) as producer:
            assert len(producer.partitions_for("wide")) == PARTITIONS
            futures = [
                (p, i, producer.send("wide", value=b"%d-%d" % (p, i), partition=p))
                for i in range(PER_PARTITION)
                for p in range(PARTITIONS)
            ]
            # keyed records spread over the partitions too (murmur2), explicit partition still wins above
            keyed = [producer.send("wide", value=b"k", key=b"key-%d" % k) for k in range(2000)]
            producer.flush(120.0)
        offsets: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for p, i, f in futures:
            meta = f.result(timeout=0)
            assert meta.partition == p
            offsets[p].append((i, meta.offset))
        assert len(offsets) == PARTITIONS
        for p, seq in offsets.items():
            # records sent to one partition get consecutive offsets in send order
            assert [o for _, o in sorted(seq)] == sorted(o for _, o in seq), p
            assert sorted(o for _, o in seq) == list(range(PER_PARTITION)), p
        keyed_partitions = {f.result(timeout=0).partition for f in keyed}
        assert len(keyed_partitions) > PARTITIONS // 2

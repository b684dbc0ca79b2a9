"""Helpers of the read tests: topics, produced records remembered exactly as the broker stored them, and rows
collected from Spark in a comparable form."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykafka_client import KafkaProducer
from pykafka_client.admin import AdminClient
from pykafka_client.admin.types import NewTopic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from mini_broker.broker import MiniBroker

_names = itertools.count()


def fresh_topic(prefix: str = "t") -> str:
    return f"{prefix}-{next(_names)}"


@dataclass(frozen=True)
class Produced:
    """A record as the broker stored it: what a read must return for it."""

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    headers: tuple[tuple[str, bytes | None], ...] | None

    def row(self, include_headers: bool) -> tuple[Any, ...]:
        base = (self.key, self.value, self.topic, self.partition, self.offset, self.timestamp, self.timestamp_type)
        return (*base, self.headers) if include_headers else base


def create_topic(broker: MiniBroker, name: str, partitions: int, **configs: str) -> None:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1, configs=configs)])


def produce(broker: MiniBroker, records: Iterable[dict[str, Any]], log_append_time: bool = False,
            **config: Any) -> list[Produced]:
    """Send ``records`` (keyword arguments of ``send``; ``partition`` required) and return them as stored."""
    out = []
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, **config) as producer:
        futures = [(r, producer.send(**r)) for r in records]
        producer.flush()
        for r, f in futures:
            meta = f.result()
            headers = r.get("headers")
            out.append(Produced(r.get("key"), r.get("value"), meta.topic, meta.partition, meta.offset,
                                meta.timestamp, 1 if log_append_time else 0,
                                tuple(headers) if headers else None))
    return out


def numbered(topic: str, count: int, partitions: int, start: int = 0, base_ts: int = 1_700_000_000_000
             ) -> list[dict[str, Any]]:
    """``count`` records spread round-robin over ``partitions``, keyed and valued by their number."""
    return [{"topic": topic, "partition": i % partitions, "key": b"k%d" % i, "value": b"v%d" % i,
             "timestamp": base_ts + i} for i in range(start, start + count)]


def rows(df: DataFrame, include_headers: bool = False) -> list[tuple[Any, ...]]:
    """The rows of a Kafka read as tuples (timestamp as epoch ms, headers as tuples), sorted."""
    columns = ["key", "value", "topic", "partition", "offset", "unix_millis(timestamp) AS ts", "timestampType"]
    if include_headers:
        columns.append("headers")
    out = []
    for r in df.selectExpr(*columns).collect():
        values = list(r)
        if include_headers:
            values[7] = None if r.headers is None else tuple((h.key, h.value) for h in r.headers)
        out.append(tuple(values))
    return sorted(out, key=lambda t: (t[2], t[3], t[4]))


def expected(produced: Sequence[Produced], include_headers: bool = False) -> list[tuple[Any, ...]]:
    return sorted((p.row(include_headers) for p in produced), key=lambda t: (t[2], t[3], t[4]))

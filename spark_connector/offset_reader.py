"""Driver-side offset lookups with our AdminClient (Spark's ``KafkaOffsetReaderAdmin``): which partitions
the subscription covers now, and their earliest / latest / by-timestamp offsets.

Used by ``partitions()`` of the batch reader and by the stream reader's ``initialOffset`` /
``latestOffset`` / ``partitions``. The AdminClient is created on first use and is never pickled (see
``__getstate__``). Each lookup is retried ``fetchOffset.numRetries`` times, ``fetchOffset.retryIntervalMs``
apart, as Spark does, except a timeout: the AdminClient already retried within its whole timeout
(``kafka.default.api.timeout.ms``), so a read against a dead broker fails once, within that timeout, with the
admin's message (the addresses tried and their last connection errors) instead of after three timeouts. Offsets honour ``kafka.isolation.level`` (read_committed: the last stable offset).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from pykafka_client.admin import AdminClient
from pykafka_client.admin.config import ADMIN_CONFIG
from pykafka_client.admin.types import IsolationLevel, OffsetSpec
from pykafka_client.errors import KafkaError, KafkaTimeoutError
from pykafka_client.structs import TopicPartition
from spark_connector.options import ASSIGN, SUBSCRIBE, OffsetLimit, ReadOptions, scala_set

log = logging.getLogger(__name__)
T = TypeVar("T")


def admin_config(options: ReadOptions) -> dict[str, str]:
    """The ``kafka.*`` options the AdminClient knows (consumer-only keys such as ``max.poll.records`` are
    left out)."""
    known = set(ADMIN_CONFIG.names())
    return {k: v for k, v in options.kafka.items() if k in known}


class OffsetReader:
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._admin: AdminClient | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_admin"] = None
        return state

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(admin_config(self.options))
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def _isolation_level(self) -> IsolationLevel:
        committed = self.options.kafka.get("isolation.level", "").strip().lower() == "read_committed"
        return IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED

    def _with_retries(self, what: str, call: Callable[[], T]) -> T:
        attempts = max(self.options.fetch_offset_num_retries, 1)
        for attempt in range(1, attempts + 1):
            try:
                return call()
            except KafkaTimeoutError:
                raise  # the admin call used its whole timeout retrying: another round would only wait again
            except KafkaError as e:
                if attempt == attempts:
                    raise
                log.warning("%s failed (attempt %d of %d), retrying in %d ms: %s", what, attempt, attempts,
                            self.options.fetch_offset_retry_interval_ms, e)
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    # -- partitions ------------------------------------------------------------------------------

    def topic_partitions(self) -> set[TopicPartition]:
        """The partitions the subscription covers now: ``assign``'s fixed set, the partitions of the
        ``subscribe`` topics that exist, or of every topic whose whole name matches ``subscribePattern``."""
        strategy = self.options.strategy
        if strategy.kind == ASSIGN:
            return set(strategy.partitions)
        return self._with_retries(f"listing the partitions of {strategy.describe()}", self._lookup_partitions)

    def _lookup_partitions(self) -> set[TopicPartition]:
        """One lookup of the partitions the subscription covers now (no retries)."""
        strategy = self.options.strategy
        if strategy.kind == ASSIGN:
            return set(strategy.partitions)
        existing = self.admin.list_topics()
        if strategy.kind == SUBSCRIBE:
            topics = [t for t in strategy.topics if t in existing]
        else:
            pattern = re.compile(strategy.pattern)
            topics = sorted(t for t in existing if pattern.fullmatch(t))
        if not topics:
            return set()
        described = self.admin.describe_topics(topics)
        return {TopicPartition(name, p.partition) for name, d in described.items() for p in d.partitions}

    # -- offsets ---------------------------------------------------------------------------------

    def _list_offsets(self, wanted: Mapping[TopicPartition, OffsetSpec]) -> dict[TopicPartition, int]:
        if not wanted:
            return {}
        specs: dict[tuple[str, int], OffsetSpec] = {(tp.topic, tp.partition): spec for tp, spec in wanted.items()}
        result = self._with_retries(
            "fetching offsets",
            lambda: self.admin.list_offsets(specs, isolation_level=self._isolation_level()))
        return {TopicPartition(tp[0], tp[1]): info.offset for tp, info in result.items()}

    def earliest(self, tps: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets({tp: OffsetSpec.earliest() for tp in tps})

    def latest(self, tps: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets({tp: OffsetSpec.latest() for tp in tps})

    def latest_of_subscription(self) -> dict[TopicPartition, int]:
        """The latest offsets of the partitions the subscription covers now. As Spark's offset reader does, every
        attempt looks the partitions up again, so a topic deleted between the lookup and the offsets request
        (UNKNOWN_TOPIC_OR_PARTITION) is left out on the next attempt instead of failing the query; the caller
        sees its partitions gone (``failOnDataLoss`` decides)."""

        def attempt() -> dict[TopicPartition, int]:
            tps = self._lookup_partitions()
            if not tps:
                return {}
            specs = {(tp.topic, tp.partition): OffsetSpec.latest() for tp in tps}
            result = self.admin.list_offsets(specs, isolation_level=self._isolation_level())
            return {TopicPartition(tp[0], tp[1]): info.offset for tp, info in result.items()}

        return self._with_retries(f"fetching the latest offsets of {self.options.strategy.describe()}", attempt)

    def for_timestamps(self, timestamps: Mapping[TopicPartition, int], *, is_start: bool,
                       strategy_latest: bool) -> dict[TopicPartition, int]:
        """The first offset at or after each timestamp. No match: latest, except for a start with the
        ``error`` strategy, which fails as Spark does."""
        found = self._list_offsets({tp: OffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()})
        missing = [tp for tp, off in found.items() if off < 0]
        if missing and is_start and not strategy_latest:
            tp = sorted(missing)[0]
            raise ValueError(f"No offset matched from request of topic-partition {tp} and timestamp "
                             f"{timestamps[tp]}.")
        latest = self.latest(missing)
        return {tp: latest[tp] if off < 0 else off for tp, off in found.items()}

    def resolve(self, limit: OffsetLimit, tps: Collection[TopicPartition], *, is_start: bool) -> dict[TopicPartition, int]:
        """``limit`` resolved to actual offsets for ``tps`` (Spark's ``fetchPartitionOffsets``): -2 / -1 in an
        offsets JSON become earliest / latest; the JSON must name exactly ``tps``."""
        if limit.kind == "earliest":
            return self.earliest(tps)
        if limit.kind == "latest":
            return self.latest(tps)
        if limit.kind == "timestamp":
            return self.for_timestamps({tp: limit.timestamp for tp in tps}, is_start=is_start,
                                       strategy_latest=limit.strategy_latest)
        if set(limit.offsets) != set(tps):
            if limit.kind == "offsets":
                raise ValueError(
                    "[KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified for Kafka start offsets "
                    "don't match what are assigned. Maybe topic partitions are created or deleted while the "
                    "query is running. Use -1 for latest, -2 for earliest. "
                    f"Specified: {scala_set(limit.offsets)} Assigned: {scala_set(tps)}")
            raise ValueError(
                "[KAFKA_TIMESTAMP_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified for Kafka timestamp based "
                f"{'starting' if is_start else 'ending'} offsets don't match what are assigned. Maybe topic "
                "partitions are created or deleted while the query is running, or you didn't specify all the "
                f"partitions. Specified: {scala_set(limit.offsets)} Assigned: {scala_set(tps)}")
        if limit.kind == "timestamps":
            return self.for_timestamps(limit.offsets, is_start=is_start, strategy_latest=limit.strategy_latest)
        out = dict(limit.offsets)
        earliest = self.earliest([tp for tp, off in out.items() if off == -2])
        latest = self.latest([tp for tp, off in out.items() if off == -1])
        out.update(earliest)
        out.update(latest)
        return out

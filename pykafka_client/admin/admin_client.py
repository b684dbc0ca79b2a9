"""The public admin client (Java: ``admin.KafkaAdminClient``), synchronous.

Threading model: the AdminClient owns a NetworkClient and drives it *in the caller's thread* for the
duration of each call (no background I/O thread). Calls are serialized by one lock, so an AdminClient
may be shared by threads but runs one operation at a time. Between calls nothing happens on the
network (idle connections are closed by the broker or by ``connections.max.idle.ms``).

Every operation takes ``timeout`` in float seconds (default ``default.api.timeout.ms``); each request
within it is bounded by ``request.timeout.ms``. Disconnects and retriable broker errors are retried
with ``retry.backoff.ms`` until the timeout, which raises :class:`KafkaTimeoutError`. Broker errors are
raised as their specific :mod:`pykafka_client.errors` class (for multi-item calls: the first failing
item's error, naming the item; the other items were still processed).

Calls that cannot succeed fail fast: an unknown topic raises UnknownTopicOrPartitionError from the
broker's answer (describe_topics, delete_topics, create_partitions, describe_configs) or after one
metadata round trip (list_offsets). As in Java, a broker resource whose id is not (yet) in the metadata
is waited for until the timeout (the broker may be starting).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from pykafka_client.admin.config import AdminClientConfig
from pykafka_client.admin.types import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    CreateTopicResult,
    IsolationLevel,
    ListOffsetsResultInfo,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    TopicDescription,
    TopicPartitionInfo,
)
from pykafka_client.client_utils import create_network_client
from pykafka_client.errors import (
    DisconnectError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    for_code,
)
from pykafka_client.errors_base import BrokerResponseError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.cluster import TP, Cluster
from pykafka_client.network.metadata import Metadata, oldest_metadata_version
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.transport.selectable import Selectable
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
)
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument, mapping_argument
from pykafka_client.utils.time import SYSTEM_TIME, Time, Timer

log = logging.getLogger(__name__)

R = TypeVar("R")

_NOT_CONTROLLER = 41
_ZERO_UUID = uuid.UUID(int=0)
# Partition-level errors after which list_offsets refreshes metadata and retries.
_RETRY_WITH_METADATA = {3, 5, 6, 74, 75, 76}  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
# NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, OFFSET_NOT_AVAILABLE


def _error(code: int, message: str | None, subject: str) -> BrokerResponseError:
    cls = for_code(code)
    return cls(f"{subject}: {message}" if message else subject)


def _raise_for_absent_partitions(cluster: Cluster, partitions: Iterable[TP]) -> None:
    """Raise UnknownTopicOrPartitionError for the first partition that fresh metadata does not list."""
    topics = cluster.topics()
    for topic, partition in partitions:
        if topic not in topics:
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} does not exist (asked for partition {topic}-{partition}); "
                "create it first or check the name"
            )
        if cluster.partition((topic, partition)) is None:
            count = cluster.partition_count_for_topic(topic)
            raise UnknownTopicOrPartitionError(
                f"partition {topic}-{partition} does not exist: topic {topic!r} has {count} partitions "
                f"(0..{(count or 1) - 1})"
            )


class AdminClient:
    """Administer topics, partitions and configurations; inspect the cluster and offsets.

    ``AdminClient({"bootstrap.servers": "localhost:9092"})``; use as a context manager or call
    :meth:`close`. ``selector``/``time`` are injectable for tests.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        time: Time = SYSTEM_TIME,
        selector: Selectable | None = None,
        **overrides: Any,
    ) -> None:
        """``config`` maps Kafka's dotted names to values; keyword arguments name the same keys with
        ``_`` for ``.`` (``AdminClient(bootstrap_servers="host:9092")``) and win over ``config``."""
        self.config = AdminClientConfig(config, **overrides)
        c = self.config
        self._time = time
        self._lock = threading.RLock()
        self._closed = False
        self._default_timeout_ms = int(c["default.api.timeout.ms"])
        self._request_timeout_ms = int(c["request.timeout.ms"])
        self._retry_backoff_ms = int(c["retry.backoff.ms"])
        self._retries = int(c["retries"])
        self.metadata = Metadata(
            int(c["retry.backoff.ms"]),
            int(c["retry.backoff.max.ms"]),
            int(c["metadata.max.age.ms"]),
            allow_auto_topic_creation=False,
        )
        self._client = create_network_client(
            c,
            self.metadata,
            client_id=str(c["client.id"]) or "pykafka-admin",
            max_in_flight_requests_per_connection=1,
            time=time,
            selector=selector,
        )

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection. Idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._client.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def network_client(self) -> NetworkClient:
        return self._client

    # --- driving the NetworkClient -------------------------------------------------------------

    def _timer(self, timeout: float | None) -> Timer:
        if self._closed:
            raise IllegalStateError("the AdminClient is closed")
        if timeout is None:
            return self._time.timer(self._default_timeout_ms)
        if timeout < 0:
            raise IllegalArgumentError(f"timeout must be non-negative, got {timeout}")
        return self._time.timer(int(timeout * 1000))

    def _now(self) -> int:
        return self._time.hi_res_clock_ms()

    def _poll(self, timer: Timer, max_ms: int = 100) -> None:
        timer.update()
        self._client.poll(max(0, min(timer.remaining_ms(), max_ms)), timer.current_time_ms())
        timer.update()
        self.metadata.maybe_throw_fatal_exception()

    def _expired(self, timer: Timer, what: str) -> KafkaTimeoutError:
        return KafkaTimeoutError(f"timed out after {timer.elapsed_ms()} ms {what}")

    def _least_loaded(self) -> Node | None:
        return self._client.least_loaded_node(self._now()).node

    def _controller_or_any(self) -> Node | None:
        cluster = self.metadata.fetch()
        if cluster.controller is not None:
            return cluster.controller
        return self._least_loaded()

    def _await_ready(self, target: Callable[[], Node | None], timer: Timer, what: str) -> Node:
        while True:
            node = target()
            if node is not None:
                if self._client.ready(node, self._now()):
                    return node
                auth = self._client.authentication_exception(node)
                if auth is not None:
                    raise auth
            if timer.is_expired():
                raise self._expired(timer, f"waiting for a broker to send {what} to")
            self._poll(timer, 50)

    def _send(
        self,
        api_key: ApiKey,
        build: Callable[[int], Any],
        target: Callable[[], Node | None],
        timer: Timer,
    ) -> tuple[Node, Any]:
        """Send ``build(version)`` to ``target()`` once it is ready and wait for the response;
        disconnects are retried until ``timer`` expires. Returns (node, response body)."""
        what = api_key.name
        retries = 0
        while True:
            node = self._await_ready(target, timer, what)
            versions = self._client.api_versions.get(node.id_string)
            version = versions.latest_usable_version(api_key) if versions is not None else None
            body = build(version if version is not None else 0)
            box: list[ClientResponse] = []
            request = self._client.new_client_request(
                node.id_string,
                body,
                self._now(),
                True,
                max(1, min(self._request_timeout_ms, timer.remaining_ms())),
                box.append,
                # a Metadata that must not auto-create, or that asks for all topics, has no older form
                # (Java's MetadataRequest.Builder refuses those versions too)
                oldest_allowed_version=oldest_metadata_version(body) if isinstance(body, MetadataRequest) else None,
                latest_allowed_version=version,
            )
            self._client.send(request, self._now())
            while not box:
                self._poll(timer, 200)
                if not box and timer.is_expired():
                    raise self._expired(timer, f"waiting for the {what} response from node {node.id}")
            response = box[0]
            if response.version_mismatch is not None:
                raise response.version_mismatch
            if response.authentication_exception is not None:
                raise response.authentication_exception
            if response.was_disconnected:
                log.info("%s to node %s failed (%s); retrying", what, node.id,
                         "timed out" if response.was_timed_out else "disconnected")
                if timer.is_expired():
                    raise self._expired(timer, f"sending {what}")
                retries += 1
                if retries > self._retries:
                    raise DisconnectError(f"{what} to node {node.id} failed after {retries} attempts")
                self._backoff(timer)
                continue
            return node, response.response_body

    def _backoff(self, timer: Timer) -> None:
        deadline = min(timer.remaining_ms(), self._retry_backoff_ms)
        wait = self._time.timer(deadline)
        while not wait.is_expired():
            self._poll(timer, wait.remaining_ms())
            wait.update()

    def _refresh_metadata(self, timer: Timer, what: str) -> None:
        version = self.metadata.request_update()
        while self.metadata.update_version() == version:
            if timer.is_expired():
                raise self._expired(timer, f"waiting for metadata ({what})")
            self._poll(timer, 100)

    # --- cluster -------------------------------------------------------------------------------

    def describe_cluster(self, timeout: float | None = None) -> ClusterDescription:
        """The cluster id, controller and brokers (DescribeCluster, or Metadata for older brokers)."""
        with self._lock:
            timer = self._timer(timeout)
            node = self._await_ready(self._least_loaded, timer, "DescribeCluster")
            versions = self._client.api_versions.get(node.id_string)
            if versions is not None and versions.api_version(ApiKey.DESCRIBE_CLUSTER) is not None:
                _, dc = self._send(ApiKey.DESCRIBE_CLUSTER, lambda v: DescribeClusterRequest(), self._least_loaded, timer)
                assert isinstance(dc, DescribeClusterResponse)
                if dc.error_code:
                    raise _error(dc.error_code, dc.error_message, "describe_cluster")
                nodes = [Node(b.broker_id, b.host, b.port, b.rack) for b in dc.brokers]
                controller = next((n for n in nodes if n.id == dc.controller_id), None)
                return ClusterDescription(dc.cluster_id, controller, nodes)
            _, md = self._send(
                ApiKey.METADATA, lambda v: MetadataRequest(topics=[], allow_auto_topic_creation=False),
                self._least_loaded, timer,
            )
            assert isinstance(md, MetadataResponse)
            nodes = [Node(b.node_id, b.host, b.port, b.rack) for b in md.brokers]
            controller = next((n for n in nodes if n.id == md.controller_id), None)
            return ClusterDescription(md.cluster_id, controller, nodes)

    # --- topics --------------------------------------------------------------------------------

    def create_topics(
        self, new_topics: Iterable[NewTopic], timeout: float | None = None, validate_only: bool = False
    ) -> dict[str, CreateTopicResult]:
        """Create topics; returns one result per topic. Raises the first topic's error (e.g.
        TopicExistsError) after all were attempted."""
        topics = list_argument(
            "create_topics", "new_topics", new_topics, NewTopic,
            "a list of NewTopic, e.g. [NewTopic('orders', num_partitions=3, replication_factor=1)]",
        )
        if not topics:
            return {}
        with self._lock:
            timer = self._timer(timeout)

            def build(version: int) -> CreateTopicsRequest:
                return CreateTopicsRequest(
                    topics=[
                        CreateTopicsRequest.CreatableTopic(
                            name=t.name,
                            num_partitions=t.num_partitions,
                            replication_factor=t.replication_factor,
                            assignments=[
                                CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
                                for p, b in (t.replica_assignments or {}).items()
                            ],
                            configs=[
                                CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()
                            ],
                        )
                        for t in topics
                    ],
                    timeout_ms=max(0, min(timer.remaining_ms(), 2**31 - 1)),
                    validate_only=validate_only if version >= 1 else False,
                )

            while True:
                _, resp = self._send(ApiKey.CREATE_TOPICS, build, self._controller_or_any, timer)
                assert isinstance(resp, CreateTopicsResponse)
                if any(r.error_code == _NOT_CONTROLLER for r in resp.topics) and not timer.is_expired():
                    self._refresh_metadata(timer, "controller")
                    self._backoff(timer)
                    continue
                break
            results: dict[str, CreateTopicResult] = {}
            first_error: BaseException | None = None
            for r in resp.topics:
                if r.error_code:
                    first_error = first_error or _error(r.error_code, r.error_message, f"topic {r.name!r}")
                    continue
                tid = r.topic_id if r.topic_id != _ZERO_UUID else None
                results[r.name] = CreateTopicResult(r.name, tid, r.num_partitions, r.replication_factor)
            self.metadata.request_update()
            if first_error is not None:
                raise first_error
            return results

    def delete_topics(self, topics: Iterable[str], timeout: float | None = None) -> None:
        """Delete topics by name. Raises the first topic's error (e.g. UnknownTopicOrPartitionError)."""
        names = list_argument("delete_topics", "topics", topics, str, "a list of topic names, e.g. ['orders']")
        if not names:
            return
        with self._lock:
            timer = self._timer(timeout)

            def build(version: int) -> DeleteTopicsRequest:
                timeout_ms = max(0, min(timer.remaining_ms(), 2**31 - 1))
                if version >= 6:
                    return DeleteTopicsRequest(
                        topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names], timeout_ms=timeout_ms
                    )
                return DeleteTopicsRequest(topic_names=names, timeout_ms=timeout_ms)

            _, resp = self._send(ApiKey.DELETE_TOPICS, build, self._controller_or_any, timer)
            assert isinstance(resp, DeleteTopicsResponse)
            self.metadata.request_update()
            for r in resp.responses:
                if r.error_code:
                    raise _error(r.error_code, r.error_message, f"topic {r.name!r}")

    def create_partitions(
        self, new_partitions: Mapping[str, NewPartitions], timeout: float | None = None, validate_only: bool = False
    ) -> None:
        """Increase partition counts. Raises the first topic's error (e.g. InvalidPartitionsError)."""
        mapping_argument(
            "create_partitions", "new_partitions", new_partitions,
            "a mapping of topic name to NewPartitions, e.g. {'orders': NewPartitions(6)}",
        )
        if not new_partitions:
            return
        with self._lock:
            timer = self._timer(timeout)

            def build(version: int) -> CreatePartitionsRequest:
                return CreatePartitionsRequest(
                    topics=[
                        CreatePartitionsRequest.CreatePartitionsTopic(
                            name=name,
                            count=np.total_count,
                            assignments=None
                            if np.new_assignments is None
                            else [
                                CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=list(a))
                                for a in np.new_assignments
                            ],
                        )
                        for name, np in new_partitions.items()
                    ],
                    timeout_ms=max(0, min(timer.remaining_ms(), 2**31 - 1)),
                    validate_only=validate_only,
                )

            _, resp = self._send(ApiKey.CREATE_PARTITIONS, build, self._controller_or_any, timer)
            assert isinstance(resp, CreatePartitionsResponse)
            self.metadata.request_update()
            for r in resp.results:
                if r.error_code:
                    raise _error(r.error_code, r.error_message, f"topic {r.name!r}")

    def describe_topics(self, topics: Iterable[str], timeout: float | None = None) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic. Raises UnknownTopicOrPartitionError (or
        another topic error) for the first topic that failed."""
        names = list_argument("describe_topics", "topics", topics, str, "a list of topic names, e.g. ['orders']")
        if not names:
            return {}
        with self._lock:
            timer = self._timer(timeout)
            _, resp = self._send(
                ApiKey.METADATA,
                lambda v: MetadataRequest(
                    topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                    allow_auto_topic_creation=False,
                ),
                self._least_loaded,
                timer,
            )
            assert isinstance(resp, MetadataResponse)
            brokers = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in resp.brokers}

            def node(i: int) -> Node:
                return brokers.get(i) or Node(i, "", -1)

            out: dict[str, TopicDescription] = {}
            first_error: BaseException | None = None
            for t in resp.topics:
                name = t.name or ""
                if t.error_code:
                    first_error = first_error or _error(t.error_code, None, f"topic {name!r}")
                    continue
                parts = [
                    TopicPartitionInfo(
                        p.partition_index,
                        brokers.get(p.leader_id),
                        [node(i) for i in p.replica_nodes],
                        [node(i) for i in p.isr_nodes],
                        p.leader_epoch if p.leader_epoch >= 0 else None,
                    )
                    for p in sorted(t.partitions, key=lambda p: p.partition_index)
                ]
                tid = t.topic_id if t.topic_id != _ZERO_UUID else None
                out[name] = TopicDescription(name, tid, t.is_internal, parts)
            if first_error is not None:
                raise first_error
            return out

    def list_topics(self, timeout: float | None = None) -> set[str]:
        """Names of all non-internal topics."""
        with self._lock:
            timer = self._timer(timeout)
            _, resp = self._send(
                ApiKey.METADATA, lambda v: MetadataRequest(topics=None, allow_auto_topic_creation=False),
                self._least_loaded, timer,
            )
            assert isinstance(resp, MetadataResponse)
            return {t.name for t in resp.topics if t.name and not t.is_internal and not t.error_code}

    # --- client quotas -------------------------------------------------------------------------

    def alter_client_quotas(
        self, entries: Iterable[ClientQuotaAlteration], timeout: float | None = None, validate_only: bool = False
    ) -> dict[ClientQuotaEntity, BaseException | None]:
        """Set or remove client quotas (AlterClientQuotas); returns each entity's error or None. Raises the
        first entity's error (e.g. InvalidRequestError for an unknown key) after all were attempted."""
        alterations = list_argument(
            "alter_client_quotas", "entries", entries, ClientQuotaAlteration,
            "a list of ClientQuotaAlteration, e.g. [ClientQuotaAlteration(ClientQuotaEntity({'client-id': 'app'}), "
            "{'producer_byte_rate': 1048576})]",
        )
        if not alterations:
            return {}
        with self._lock:
            timer = self._timer(timeout)

            def build(version: int) -> AlterClientQuotasRequest:
                return AlterClientQuotasRequest(
                    entries=[
                        AlterClientQuotasRequest.EntryData(
                            entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n)
                                    for t, n in a.entity.entries.items()],
                            ops=[AlterClientQuotasRequest.OpData(key=k, value=0.0 if v is None else float(v),
                                                                 remove=v is None) for k, v in a.ops.items()],
                        )
                        for a in alterations
                    ],
                    validate_only=validate_only,
                )

            _, resp = self._send(ApiKey.ALTER_CLIENT_QUOTAS, build, self._least_loaded, timer)
            assert isinstance(resp, AlterClientQuotasResponse)
            out: dict[ClientQuotaEntity, BaseException | None] = {}
            first_error: BaseException | None = None
            for e in resp.entries:
                entity = ClientQuotaEntity({d.entity_type: d.entity_name for d in e.entity})
                err = _error(e.error_code, e.error_message, f"{entity}") if e.error_code else None
                out[entity] = err
                first_error = first_error or err
            if first_error is not None:
                raise first_error
            return out

    def describe_client_quotas(
        self, quota_filter: ClientQuotaFilter | None = None, timeout: float | None = None
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The client quotas set for the entities ``quota_filter`` matches (all when None)."""
        qf = quota_filter or ClientQuotaFilter.all()
        if not isinstance(qf, ClientQuotaFilter):
            raise TypeError(f"describe_client_quotas() expects quota_filter as a ClientQuotaFilter, got {qf!r}")
        with self._lock:
            timer = self._timer(timeout)

            def build(version: int) -> DescribeClientQuotasRequest:
                return DescribeClientQuotasRequest(
                    components=[DescribeClientQuotasRequest.ComponentData(
                        entity_type=c.entity_type, match_type=int(c.match_type), match=c.match) for c in qf.components],
                    strict=qf.strict,
                )

            _, resp = self._send(ApiKey.DESCRIBE_CLIENT_QUOTAS, build, self._least_loaded, timer)
            assert isinstance(resp, DescribeClientQuotasResponse)
            if resp.error_code:
                raise _error(resp.error_code, resp.error_message, "describe_client_quotas")
            return {
                ClientQuotaEntity({d.entity_type: d.entity_name for d in e.entity}): {v.key: v.value for v in e.values}
                for e in resp.entries or []
            }

    # --- configs -------------------------------------------------------------------------------

    def describe_configs(
        self, resources: Iterable[ConfigResource], timeout: float | None = None
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Configuration entries of topics / brokers. Broker resources go to that broker."""
        res = list_argument(
            "describe_configs", "resources", resources, ConfigResource,
            "a list of ConfigResource, e.g. [ConfigResource(ConfigResourceType.TOPIC, 'orders')]",
        )
        if not res:
            return {}
        with self._lock:
            timer = self._timer(timeout)
            groups: dict[int | None, list[ConfigResource]] = defaultdict(list)
            for r in res:
                is_broker = r.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)
                groups[int(r.name) if is_broker and r.name else None].append(r)
            out: dict[ConfigResource, dict[str, ConfigEntry]] = {}
            first_error: BaseException | None = None
            for broker_id, items in groups.items():
                target = self._least_loaded if broker_id is None else self._broker_target(broker_id)

                def build(version: int, items: list[ConfigResource] = items) -> DescribeConfigsRequest:
                    return DescribeConfigsRequest(
                        resources=[
                            DescribeConfigsRequest.DescribeConfigsResource(
                                resource_type=int(i.type), resource_name=i.name, configuration_keys=None
                            )
                            for i in items
                        ]
                    )

                _, resp = self._send(ApiKey.DESCRIBE_CONFIGS, build, target, timer)
                assert isinstance(resp, DescribeConfigsResponse)
                for result in resp.results:
                    key = ConfigResource(ConfigResourceType(result.resource_type), result.resource_name)
                    if result.error_code:
                        first_error = first_error or _error(result.error_code, result.error_message, f"{key}")
                        continue
                    entries: dict[str, ConfigEntry] = {}
                    for c in result.configs:
                        source = ConfigSource(c.config_source) if c.config_source in ConfigSource._value2member_map_ else ConfigSource.UNKNOWN
                        if c.is_default and source is ConfigSource.UNKNOWN:
                            source = ConfigSource.DEFAULT_CONFIG
                        entries[c.name] = ConfigEntry(c.name, c.value, source, c.read_only, c.is_sensitive)
                    out[key] = entries
            if first_error is not None:
                raise first_error
            return out

    def _broker_target(self, broker_id: int) -> Callable[[], Node | None]:
        def target() -> Node | None:
            node = self.metadata.fetch().node_by_id(broker_id)
            if node is None:
                self.metadata.request_update()
            return node

        return target

    # --- offsets -------------------------------------------------------------------------------

    def list_offsets(
        self,
        specs: Mapping[TP, OffsetSpec],
        timeout: float | None = None,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> dict[TP, ListOffsetsResultInfo]:
        """Earliest / latest / max-timestamp / by-timestamp offsets, asked of each partition's leader.

        A topic the cluster does not have, or a partition past its partition count, raises
        UnknownTopicOrPartitionError after one metadata round trip (as Java since KAFKA-15425); a
        partition without a leader (an election in progress) is retried until the timeout.
        """
        mapping_argument(
            "list_offsets", "specs", specs,
            "a mapping of TopicPartition to OffsetSpec, e.g. {TopicPartition('orders', 0): OffsetSpec.latest()}",
        )
        remaining: dict[TP, OffsetSpec] = {(tp[0], tp[1]): s for tp, s in specs.items()}
        if not remaining:
            return {}
        with self._lock:
            timer = self._timer(timeout)
            out: dict[TP, ListOffsetsResultInfo] = {}
            stale = False  # set when a leader answered that the cached metadata is out of date
            while remaining:
                cluster = self.metadata.fetch()
                if stale or any(cluster.leader_for(tp) is None for tp in remaining):
                    self._refresh_metadata(timer, f"leaders of {sorted(remaining)}")
                    cluster = self.metadata.fetch()
                    _raise_for_absent_partitions(cluster, remaining)
                    stale = False
                    if any(cluster.leader_for(tp) is None for tp in remaining):
                        stale = True
                        self._backoff(timer)
                        continue
                by_leader: dict[int, list[TP]] = defaultdict(list)
                for tp in remaining:
                    leader = cluster.leader_for(tp)
                    assert leader is not None
                    by_leader[leader.id].append(tp)
                retry = False
                for leader_id, tps in by_leader.items():
                    retry |= self._list_offsets_from(leader_id, tps, remaining, out, timer, isolation_level)
                if retry and remaining:
                    if timer.is_expired():
                        raise self._expired(timer, "listing offsets")
                    stale = True
                    self._backoff(timer)
            return out

    def _list_offsets_from(
        self,
        leader_id: int,
        tps: list[TP],
        remaining: dict[TP, OffsetSpec],
        out: dict[TP, ListOffsetsResultInfo],
        timer: Timer,
        isolation_level: IsolationLevel,
    ) -> bool:
        by_topic: dict[str, list[TP]] = defaultdict(list)
        for tp in tps:
            by_topic[tp[0]].append(tp)

        def build(version: int) -> ListOffsetsRequest:
            if version < 7 and any(remaining[tp].timestamp == OffsetSpec.MAX_TIMESTAMP for tp in tps):
                from pykafka_client.errors import UnsupportedVersionError

                raise UnsupportedVersionError("OffsetSpec.max_timestamp() needs ListOffsets v7 or later")
            return ListOffsetsRequest(
                replica_id=-1,
                isolation_level=int(isolation_level) if version >= 2 else 0,
                topics=[
                    ListOffsetsRequest.ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            ListOffsetsRequest.ListOffsetsPartition(
                                partition_index=tp[1],
                                timestamp=remaining[tp].timestamp,
                                current_leader_epoch=(
                                    (self.metadata.last_seen_leader_epoch(tp) or -1) if version >= 4 else -1
                                ),
                                max_num_offsets=1,
                            )
                            for tp in parts
                        ],
                    )
                    for topic, parts in by_topic.items()
                ],
                timeout_ms=max(0, min(timer.remaining_ms(), 2**31 - 1)) if version >= 10 else 60_000,
            )

        _, resp = self._send(ApiKey.LIST_OFFSETS, build, self._broker_target(leader_id), timer)
        assert isinstance(resp, ListOffsetsResponse)
        retry = False
        for t in resp.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if tp not in remaining:
                    continue
                if p.error_code in _RETRY_WITH_METADATA:
                    retry = True
                    continue
                if p.error_code:
                    raise _error(p.error_code, None, f"partition {t.name}-{p.partition_index}")
                offset = p.offset
                if not offset and p.old_style_offsets:
                    offset = p.old_style_offsets[0]
                out[tp] = ListOffsetsResultInfo(offset, p.timestamp, p.leader_epoch if p.leader_epoch >= 0 else None)
                del remaining[tp]
        # A partition the leader did not answer for: refresh and ask again.
        return retry or any(tp in remaining for tp in tps)

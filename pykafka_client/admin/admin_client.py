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
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from types import TracebackType
from typing import Any, TypeVar

from pykafka_client.admin import transactions
from pykafka_client.admin.config import AdminClientConfig
from pykafka_client.admin.group_types import (
    AlterConfigOp,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    MemberDescription,
)
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
    ProducerState,
    TopicDescription,
    TopicPartitionInfo,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)
from pykafka_client.client_utils import create_network_client
from pykafka_client.errors import (
    DisconnectError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
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
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from pykafka_client.protocol.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykafka_client.protocol.types import Reader
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition
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

# NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS: find the coordinator again.
_COORDINATOR_MOVED = {16, 15, 14}


def _assigned_partitions(member_assignment: bytes) -> list[TopicPartition]:
    """The partitions in a consumer-protocol member assignment (int16 version, then the assignment)."""
    if not member_assignment:
        return []
    r = Reader(member_assignment)
    version = min(max(r.read_int16(), 0), 3)
    data = ConsumerProtocolAssignment.read(r, version)
    return sorted(TopicPartition(t.topic, p) for t in data.assigned_partitions for p in t.partitions)


def _one_group(request: Callable[..., Any], field_name: str, group_id: str) -> Callable[[int], Any]:
    """A request builder naming one group in the list field ``field_name`` (the same at every version)."""
    return lambda version: request(**{field_name: [group_id]})


def _take_partition_results(topics: Iterable[Any], remaining: MutableMapping[TP, Any], asked: Iterable[TP],
                            store: Callable[[TP, Any], None]) -> bool:
    """Per-partition answers of a leader: ``store`` each good one and drop it from ``remaining``; raise the
    first error that is not a stale-metadata one. True when some partition must be asked again (stale
    metadata, or no answer for it) after a metadata refresh."""
    retry = False
    for t in topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if tp not in remaining:
                continue
            if p.error_code in _RETRY_WITH_METADATA:
                retry = True
                continue
            if p.error_code:
                raise _error(p.error_code, getattr(p, "error_message", None), f"partition {t.name}-{p.partition_index}")
            store(tp, p)
            del remaining[tp]
    # A partition the leader did not answer for: refresh and ask again.
    return retry or any(tp in remaining for tp in asked)


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

    # --- consumer groups, records and incremental configs (issue 14) ---------------------------

    def _find_coordinator(self, group_id: str, timer: Timer, key_type: int = 0) -> int:
        """The node id of ``group_id``'s coordinator (FindCoordinator; ``key_type`` 1: of the transactional id
        ``group_id``), retried while the coordinator is loading or not available until ``timer`` expires."""

        def build(version: int) -> FindCoordinatorRequest:
            if version >= 4:
                return FindCoordinatorRequest(key_type=key_type, coordinator_keys=[group_id])
            return FindCoordinatorRequest(key=group_id, key_type=key_type)

        while True:
            _, resp = self._send(ApiKey.FIND_COORDINATOR, build, self._least_loaded, timer)
            assert isinstance(resp, FindCoordinatorResponse)
            if resp.coordinators:
                c = resp.coordinators[0]
                code, message, node_id = c.error_code, c.error_message, c.node_id
            else:
                code, message, node_id = resp.error_code, resp.error_message, resp.node_id
            if not code:
                return node_id
            what = "transactional id" if key_type == 1 else "group"
            error = _error(code, message, f"finding the coordinator of {what} {group_id!r}")
            if not error.retriable or timer.is_expired():
                raise error
            self._backoff(timer)

    def _send_to_coordinator(
        self, group_id: str, api_key: ApiKey, build: Callable[[int], Any], error_of: Callable[[Any], int], timer: Timer
    ) -> tuple[Node, Any]:
        """Send ``build(version)`` to the group's coordinator; when the answer's ``error_of`` says the
        coordinator moved or is loading, find it again and resend until ``timer`` expires."""
        while True:
            coordinator = self._find_coordinator(group_id, timer)
            node, resp = self._send(api_key, build, self._broker_target(coordinator), timer)
            code = error_of(resp)
            if code in _COORDINATOR_MOVED and not timer.is_expired():
                self._backoff(timer)
                continue
            return node, resp

    def _ask_each_coordinator(
        self, group_ids: list[str], api_key: ApiKey, request: Callable[..., Any], field_name: str, results_field: str,
        timer: Timer,
    ) -> list[tuple[Node, Any]]:
        """Send ``request(field_name=[group_id])`` to each group's coordinator; ``results_field`` names the
        response's per-group list, whose first error code says whether the coordinator moved."""

        def error_of(resp: Any) -> int:
            results = getattr(resp, results_field)
            return int(results[0].error_code) if results else 0

        return [
            self._send_to_coordinator(g, api_key, _one_group(request, field_name, g), error_of, timer) for g in group_ids
        ]

    def list_consumer_groups(self, timeout: float | None = None) -> list[ConsumerGroupListing]:
        """Every group of every broker (ListGroups to each), sorted by group id."""
        with self._lock:
            timer = self._timer(timeout)
            if not self.metadata.fetch().nodes or any(n.id < 0 for n in self.metadata.fetch().nodes):
                self._refresh_metadata(timer, "brokers to list groups of")
            out: list[ConsumerGroupListing] = []
            for broker in self.metadata.fetch().nodes:
                _, resp = self._send(ApiKey.LIST_GROUPS, lambda v: ListGroupsRequest(), self._broker_target(broker.id), timer)
                assert isinstance(resp, ListGroupsResponse)
                if resp.error_code:
                    raise _error(resp.error_code, None, f"listing the groups of broker {broker.id}")
                out += [ConsumerGroupListing(g.group_id, g.group_state, g.protocol_type) for g in resp.groups]
            return sorted(out, key=lambda g: g.group_id)

    def describe_consumer_groups(
        self, group_ids: Iterable[str], timeout: float | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        """State, assignor and members (with their assignments) of each group. A group the broker does not
        know is described with state ``Dead`` and no members, as Kafka does."""
        ids = list_argument("describe_consumer_groups", "group_ids", group_ids, str, "a list of group ids, e.g. ['billing']")
        out: dict[str, ConsumerGroupDescription] = {}
        with self._lock:
            timer = self._timer(timeout)
            for node, resp in self._ask_each_coordinator(ids, ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest, "groups", "groups", timer):
                assert isinstance(resp, DescribeGroupsResponse)
                for g in resp.groups:
                    if g.error_code:
                        raise _error(g.error_code, None, f"group {g.group_id!r}")
                    members = [
                        MemberDescription(
                            m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            _assigned_partitions(m.member_assignment) if g.protocol_type == "consumer" else [],
                        )
                        for m in g.members
                    ]
                    out[g.group_id] = ConsumerGroupDescription(
                        g.group_id, not g.protocol_type, members, g.protocol_data, g.group_state, node
                    )
        return out

    def delete_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None) -> None:
        """Delete empty groups with their committed offsets. Raises GroupNotEmptyError for a group with
        members, GroupIdNotFoundError for an unknown one (the first failing group; the others were tried)."""
        ids = list_argument("delete_consumer_groups", "group_ids", group_ids, str, "a list of group ids, e.g. ['billing']")
        first_error: BaseException | None = None
        with self._lock:
            timer = self._timer(timeout)
            for _, resp in self._ask_each_coordinator(ids, ApiKey.DELETE_GROUPS, DeleteGroupsRequest, "groups_names", "results", timer):
                assert isinstance(resp, DeleteGroupsResponse)
                for r in resp.results:
                    if r.error_code:
                        first_error = first_error or _error(r.error_code, None, f"group {r.group_id!r}")
        if first_error is not None:
            raise first_error

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TP] | None = None, timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The committed offsets of ``group_id`` (all of them, or those of ``partitions``); partitions
        without a committed offset are left out."""
        wanted = None if partitions is None else sorted({(tp[0], tp[1]) for tp in partitions})
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, partition in wanted or []:
            by_topic[topic].append(partition)

        def build(version: int) -> OffsetFetchRequest:
            if version < 2 and wanted is None:
                raise UnsupportedVersionError(
                    f"the broker supports OffsetFetch v{version} only; asking for all of a group's offsets needs v2 "
                    "or later: name the partitions"
                )
            if version >= 8:
                topics8 = None if wanted is None else [
                    OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=p) for t, p in by_topic.items()
                ]
                return OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group_id, topics=topics8)])
            topics = None if wanted is None else [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in by_topic.items()
            ]
            return OffsetFetchRequest(group_id=group_id, topics=topics)

        def error_of(r: OffsetFetchResponse) -> int:
            return r.groups[0].error_code if r.groups else r.error_code

        with self._lock:
            timer = self._timer(timeout)
            _, resp = self._send_to_coordinator(group_id, ApiKey.OFFSET_FETCH, build, error_of, timer)
            assert isinstance(resp, OffsetFetchResponse)
            if error_of(resp):
                raise _error(error_of(resp), None, f"fetching the offsets of group {group_id!r}")
            rows: list[tuple[str, Any]] = (
                [(t.name, p) for g in resp.groups for t in g.topics for p in t.partitions]
                if resp.groups
                else [(t.name, p) for t in resp.topics for p in t.partitions]
            )
            out: dict[TopicPartition, OffsetAndMetadata] = {}
            for topic, p in rows:
                if p.error_code:
                    raise _error(p.error_code, None, f"offset of {topic}-{p.partition_index} in group {group_id!r}")
                if p.committed_offset >= 0:
                    epoch = p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None
                    out[TopicPartition(topic, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset, p.metadata or "", epoch
                    )
            return out

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TP, OffsetAndMetadata | int], timeout: float | None = None
    ) -> None:
        """Commit ``offsets`` for ``group_id`` as an admin (no member, generation -1): the group must have
        no active members, else the broker refuses (UnknownMemberIdError; Kafka's rule)."""
        mapping_argument(
            "alter_consumer_group_offsets", "offsets", offsets,
            "a mapping of TopicPartition to OffsetAndMetadata, e.g. {TopicPartition('orders', 0): OffsetAndMetadata(42)}",
        )
        if not offsets:
            return
        by_topic: dict[str, list[tuple[int, OffsetAndMetadata]]] = defaultdict(list)
        for tp, o in offsets.items():
            by_topic[tp[0]].append((tp[1], o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)))

        def build(version: int) -> OffsetCommitRequest:
            return OffsetCommitRequest(
                group_id=group_id,
                topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(
                        name=topic,
                        partitions=[
                            OffsetCommitRequest.OffsetCommitRequestPartition(
                                partition_index=p, committed_offset=o.offset,
                                committed_leader_epoch=-1 if o.leader_epoch is None else o.leader_epoch,
                                committed_metadata=o.metadata,
                            )
                            for p, o in parts
                        ],
                    )
                    for topic, parts in by_topic.items()
                ],
            )

        def error_of(r: OffsetCommitResponse) -> int:
            return next((p.error_code for t in r.topics for p in t.partitions if p.error_code), 0)

        with self._lock:
            timer = self._timer(timeout)
            _, resp = self._send_to_coordinator(group_id, ApiKey.OFFSET_COMMIT, build, error_of, timer)
            assert isinstance(resp, OffsetCommitResponse)
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code:
                        raise _error(p.error_code, None, f"committing {t.name}-{p.partition_index} for group {group_id!r}")

    def delete_records(
        self, before_offsets: Mapping[TP, int], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """Delete the records of each partition below the given offset (-1: the high watermark), asked of
        each partition's leader; returns each partition's new low watermark."""
        mapping_argument(
            "delete_records", "before_offsets", before_offsets,
            "a mapping of TopicPartition to offset, e.g. {TopicPartition('orders', 0): 100}",
        )
        if not before_offsets:
            return {}
        with self._lock:
            timer = self._timer(timeout)
            self._refresh_metadata(timer, "leaders to delete records on")
            cluster = self.metadata.fetch()
            _raise_for_absent_partitions(cluster, before_offsets)
            by_leader: dict[int, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
            for tp, offset in before_offsets.items():
                leader = cluster.leader_for((tp[0], tp[1]))
                if leader is None:
                    raise _error(5, None, f"partition {tp[0]}-{tp[1]} has no leader; try again shortly")
                by_leader[leader.id][tp[0]].append((tp[1], offset))
            out: dict[TopicPartition, int] = {}
            for leader_id, topics in by_leader.items():

                def build(version: int, topics: dict[str, list[tuple[int, int]]] = topics) -> DeleteRecordsRequest:
                    return DeleteRecordsRequest(
                        topics=[
                            DeleteRecordsRequest.DeleteRecordsTopic(
                                name=t,
                                partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o) for p, o in parts],
                            )
                            for t, parts in topics.items()
                        ],
                        timeout_ms=max(0, min(timer.remaining_ms(), 2**31 - 1)),
                    )

                _, resp = self._send(ApiKey.DELETE_RECORDS, build, self._broker_target(leader_id), timer)
                assert isinstance(resp, DeleteRecordsResponse)
                for t in resp.topics:
                    for p in t.partitions:
                        if p.error_code:
                            raise _error(p.error_code, None, f"deleting records of {t.name}-{p.partition_index}")
                        out[TopicPartition(t.name, p.partition_index)] = p.low_watermark
            return out

    def incremental_alter_configs(
        self, configs: Mapping[ConfigResource, Iterable[AlterConfigOp]], timeout: float | None = None,
        validate_only: bool = False,
    ) -> None:
        """Set, delete, append to or subtract from config overrides of topics and brokers (broker resources
        go to that broker). Raises the first resource's error after all were attempted."""
        mapping_argument(
            "incremental_alter_configs", "configs", configs,
            "a mapping of ConfigResource to a list of AlterConfigOp, e.g. "
            "{ConfigResource(ConfigResourceType.TOPIC, 'orders'): [AlterConfigOp('retention.ms', '60000')]}",
        )
        groups: dict[int | None, list[tuple[ConfigResource, list[AlterConfigOp]]]] = defaultdict(list)
        for r, ops in configs.items():
            is_broker = r.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)
            groups[int(r.name) if is_broker and r.name else None].append((r, list(ops)))
        first_error: BaseException | None = None
        with self._lock:
            timer = self._timer(timeout)
            for broker_id, items in groups.items():
                target = self._least_loaded if broker_id is None else self._broker_target(broker_id)

                def build(version: int, items: list[tuple[ConfigResource, list[AlterConfigOp]]] = items) -> IncrementalAlterConfigsRequest:
                    return IncrementalAlterConfigsRequest(
                        resources=[
                            IncrementalAlterConfigsRequest.AlterConfigsResource(
                                resource_type=int(r.type), resource_name=r.name,
                                configs=[
                                    IncrementalAlterConfigsRequest.AlterableConfig(
                                        name=op.name, config_operation=int(op.op_type), value=op.value
                                    )
                                    for op in ops
                                ],
                            )
                            for r, ops in items
                        ],
                        validate_only=validate_only,
                    )

                _, resp = self._send(ApiKey.INCREMENTAL_ALTER_CONFIGS, build, target, timer)
                assert isinstance(resp, IncrementalAlterConfigsResponse)
                for result in resp.responses:
                    if result.error_code:
                        key = ConfigResource(ConfigResourceType(result.resource_type), result.resource_name)
                        first_error = first_error or _error(result.error_code, result.error_message, f"{key}")
        if first_error is not None:
            raise first_error

    # --- offsets -------------------------------------------------------------------------------

    def list_offsets(
        self,
        specs: Mapping[TP, OffsetSpec],
        timeout: float | None = None,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """Earliest / latest / max-timestamp / by-timestamp offsets, asked of each partition's leader;
        keyed by TopicPartition (equal to the ``(topic, partition)`` tuples it accepts).

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
            self._ask_leaders(
                remaining, timer, "listing offsets",
                lambda leader_id, tps: self._list_offsets_from(leader_id, tps, remaining, out, timer, isolation_level))
            return {TopicPartition(tp[0], tp[1]): info for tp, info in out.items()}

    def _ask_leaders(self, remaining: Mapping[TP, object], timer: Timer, what: str,
                     ask: Callable[[int, list[TP]], bool]) -> None:
        """Until ``remaining`` is empty: ``ask(leader id, its partitions)`` of each partition's leader (it removes
        what it answered; True: retry with fresh metadata). Absent partitions raise UnknownTopicOrPartitionError
        after one metadata round trip; partitions without a leader are retried until the timeout."""
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
                retry |= ask(leader_id, tps)
            if retry and remaining:
                if timer.is_expired():
                    raise self._expired(timer, what)
                stale = True
                self._backoff(timer)

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

        def store(tp: TP, p: ListOffsetsResponse.ListOffsetsPartitionResponse) -> None:
            offset = p.offset
            if not offset and p.old_style_offsets:
                offset = p.old_style_offsets[0]
            out[tp] = ListOffsetsResultInfo(offset, p.timestamp, p.leader_epoch if p.leader_epoch >= 0 else None)

        return _take_partition_results(resp.topics, remaining, tps, store)

    # --- transactions -------------------------------------------------------------------------

    def describe_transactions(self, transactional_ids: Iterable[str],
                              timeout: float | None = None) -> dict[str, TransactionDescription]:
        """State, producer id/epoch, timeout, start time and partitions of each transactional id, asked of its
        coordinator. An unknown id raises TransactionalIdNotFoundError naming it."""
        ids = list_argument("describe_transactions", "transactional_ids", transactional_ids, str,
                            "a list of transactional ids (str)")
        with self._lock:
            return transactions.describe_transactions(self, ids, self._timer(timeout))

    def list_transactions(self, states: Iterable[TransactionState] = (), producer_ids: Iterable[int] = (),
                          duration_ms: int = -1, timeout: float | None = None) -> list[TransactionListing]:
        """Every transactional id of every broker, filtered by state, producer id and (``duration_ms`` >= 0)
        a transaction start more than that long ago (ids with no open transaction match that filter too, as
        in Kafka: combine it with ``states=[TransactionState.ONGOING]``)."""
        wanted = list_argument("list_transactions", "states", states, TransactionState,
                               "a list of TransactionState, e.g. [TransactionState.ONGOING]")
        pids = list_argument("list_transactions", "producer_ids", producer_ids, int, "a list of producer ids (int)")
        with self._lock:
            return transactions.list_transactions(self, wanted, pids, duration_ms, self._timer(timeout))

    # --- producers -----------------------------------------------------------------------------

    def describe_producers(self, partitions: Iterable[TP], timeout: float | None = None
                           ) -> dict[TopicPartition, list[ProducerState]]:
        """The active idempotent/transactional producers of each partition (keyed by TopicPartition), asked of its leader (Java
        ``describeProducers``): producer id and epoch, last sequence and timestamp, coordinator epoch and the
        start offset of its open transaction (None when none). Errors as :meth:`list_offsets`."""
        wanted = list_argument("describe_producers", "partitions", partitions, tuple,
                               "an iterable of TopicPartition, e.g. [TopicPartition('orders', 0)]")
        remaining: dict[TP, None] = {(tp[0], tp[1]): None for tp in wanted}
        if not remaining:
            return {}
        with self._lock:
            timer = self._timer(timeout)
            out: dict[TP, list[ProducerState]] = {}
            self._ask_leaders(remaining, timer, "describing producers",
                              lambda leader_id, tps: self._describe_producers_from(leader_id, tps, remaining, out, timer))
            return {TopicPartition(tp[0], tp[1]): states for tp, states in out.items()}

    def _describe_producers_from(self, leader_id: int, tps: list[TP], remaining: dict[TP, None],
                                 out: dict[TP, list[ProducerState]], timer: Timer) -> bool:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in tps:
            by_topic[tp[0]].append(tp[1])
        request = DescribeProducersRequest(topics=[
            DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
        _, resp = self._send(ApiKey.DESCRIBE_PRODUCERS, lambda _v: request, self._broker_target(leader_id), timer)
        assert isinstance(resp, DescribeProducersResponse)

        def store(tp: TP, p: DescribeProducersResponse.PartitionResponse) -> None:
            out[tp] = [ProducerState(
                producer_id=s.producer_id, producer_epoch=s.producer_epoch, last_sequence=s.last_sequence,
                last_timestamp=s.last_timestamp,
                coordinator_epoch=s.coordinator_epoch if s.coordinator_epoch >= 0 else None,
                current_transaction_start_offset=(
                    s.current_txn_start_offset if s.current_txn_start_offset >= 0 else None))
                for s in p.active_producers]

        return _take_partition_results(resp.topics, remaining, tps, store)

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
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from pykafka_client.admin import cluster, groups, log_dirs, offsets, quotas, transactions
from pykafka_client.admin import configs as config_calls
from pykafka_client.admin import topics as topic_calls
from pykafka_client.admin.admin_calls import broker_error, raise_for_absent_partitions
from pykafka_client.admin.config import AdminClientConfig
from pykafka_client.admin.group_types import (
    AlterConfigOp,
    ConsumerGroupDescription,
    ConsumerGroupListing,
)
from pykafka_client.admin.types import (
    AbortTransactionSpec,
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    CreateTopicResult,
    IsolationLevel,
    ListOffsetsResultInfo,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ProducerState,
    TopicDescription,
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
)
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.cluster import TP
from pykafka_client.network.metadata import Metadata, oldest_metadata_version
from pykafka_client.network.network_client import NetworkClient
from pykafka_client.network.transport.selectable import Selectable
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
)
from pykafka_client.structs import Node, OffsetAndMetadata, TopicPartition
from pykafka_client.utils.arguments import list_argument
from pykafka_client.utils.time import SYSTEM_TIME, Time, Timer

log = logging.getLogger(__name__)

R = TypeVar("R")


# NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS: find the coordinator again.
_COORDINATOR_MOVED = {16, 15, 14}


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
        """``timed out after N ms <what>``, and when no broker could be reached: the bootstrap servers and
        each address tried with its last connection error."""
        text = f"timed out after {timer.elapsed_ms()} ms {what}"
        reason = self._client.unreachable_reason()
        if reason is None:
            return KafkaTimeoutError(text)
        servers = ",".join(self.config["bootstrap.servers"])
        return KafkaTimeoutError(f"{text} (bootstrap.servers={servers}): {reason}")

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
                raise self._expired(timer, f"waiting for a broker to take the {what} request")
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
        return cluster.describe_cluster(self, timeout)

    def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None, timeout: float | None = None
    ) -> dict[int, dict[str, LogDirDescription]]:
        """Per broker (all when None), per log directory path: its error, its replicas' sizes and lags, and its
        volume's total/usable bytes (DescribeLogDirs). Raises the first broker-level error."""
        return log_dirs.describe_log_dirs(self, broker_ids, timeout)

    # --- topics --------------------------------------------------------------------------------

    def create_topics(
        self, new_topics: Iterable[NewTopic], timeout: float | None = None, validate_only: bool = False
    ) -> dict[str, CreateTopicResult]:
        """Create topics; returns one result per topic. Raises the first topic's error (e.g.
        TopicExistsError) after all were attempted."""
        return topic_calls.create_topics(self, new_topics, timeout, validate_only)

    def delete_topics(self, topics: Iterable[str], timeout: float | None = None) -> None:
        """Delete topics by name. Raises the first topic's error (e.g. UnknownTopicOrPartitionError)."""
        topic_calls.delete_topics(self, topics, timeout)

    def create_partitions(
        self, new_partitions: Mapping[str, NewPartitions], timeout: float | None = None, validate_only: bool = False
    ) -> None:
        """Increase partition counts. Raises the first topic's error (e.g. InvalidPartitionsError)."""
        topic_calls.create_partitions(self, new_partitions, timeout, validate_only)

    def describe_topics(self, topics: Iterable[str], timeout: float | None = None) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of each topic. Raises UnknownTopicOrPartitionError (or
        another topic error) for the first topic that failed."""
        return topic_calls.describe_topics(self, topics, timeout)

    def list_topics(self, timeout: float | None = None) -> set[str]:
        """Names of all non-internal topics."""
        return topic_calls.list_topics(self, timeout)

    # --- client quotas -------------------------------------------------------------------------

    def alter_client_quotas(
        self, entries: Iterable[ClientQuotaAlteration], timeout: float | None = None, validate_only: bool = False
    ) -> dict[ClientQuotaEntity, BaseException | None]:
        """Set or remove client quotas (AlterClientQuotas); returns each entity's error or None. Raises the
        first entity's error (e.g. InvalidRequestError for an unknown key) after all were attempted."""
        return quotas.alter_client_quotas(self, entries, timeout, validate_only)

    def describe_client_quotas(
        self, quota_filter: ClientQuotaFilter | None = None, timeout: float | None = None
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The client quotas set for the entities ``quota_filter`` matches (all when None)."""
        return quotas.describe_client_quotas(self, quota_filter, timeout)

    # --- configs -------------------------------------------------------------------------------

    def describe_configs(
        self, resources: Iterable[ConfigResource], timeout: float | None = None
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Configuration entries of topics / brokers. Broker resources go to that broker."""
        return config_calls.describe_configs(self, resources, timeout)

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
            error = broker_error(code, message, f"finding the coordinator of {what} {group_id!r}")
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


    def list_consumer_groups(self, timeout: float | None = None) -> list[ConsumerGroupListing]:
        """Every group of every broker (ListGroups to each), sorted by group id."""
        return groups.list_consumer_groups(self, timeout)

    def describe_consumer_groups(
        self, group_ids: Iterable[str], timeout: float | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        """State, assignor and members (with their assignments) of each group. A group the broker does not
        know is described with state ``Dead`` and no members, as Kafka does."""
        return groups.describe_consumer_groups(self, group_ids, timeout)

    def delete_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None) -> None:
        """Delete empty groups with their committed offsets. Raises GroupNotEmptyError for a group with
        members, GroupIdNotFoundError for an unknown one (the first failing group; the others were tried)."""
        groups.delete_consumer_groups(self, group_ids, timeout)

    def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TP] | None = None, timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The committed offsets of ``group_id`` (all of them, or those of ``partitions``); partitions
        without a committed offset are left out."""
        return groups.list_consumer_group_offsets(self, group_id, partitions, timeout)

    def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TP, OffsetAndMetadata | int], timeout: float | None = None
    ) -> None:
        """Commit ``offsets`` for ``group_id`` as an admin (no member, generation -1): the group must have
        no active members, else the broker refuses (UnknownMemberIdError; Kafka's rule)."""
        groups.alter_consumer_group_offsets(self, group_id, offsets, timeout)

    def delete_records(
        self, before_offsets: Mapping[TP, int], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        """Delete the records of each partition below the given offset (-1: the high watermark), asked of
        each partition's leader; returns each partition's new low watermark."""
        return offsets.delete_records(self, before_offsets, timeout)

    def incremental_alter_configs(
        self, configs: Mapping[ConfigResource, Iterable[AlterConfigOp]], timeout: float | None = None,
        validate_only: bool = False,
    ) -> None:
        """Set, delete, append to or subtract from config overrides of topics and brokers (broker resources
        go to that broker). Raises the first resource's error after all were attempted."""
        config_calls.incremental_alter_configs(self, configs, timeout, validate_only)

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
        return offsets.list_offsets(self, specs, timeout, isolation_level)

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
                raise_for_absent_partitions(cluster, remaining)
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

    def abort_transaction(self, spec: AbortTransactionSpec, timeout: float | None = None) -> None:
        """End a partition's open transaction by writing an ABORT marker to its leader (Java
        ``abortTransaction``), for a hanging transaction that no coordinator will finish (see
        ``pykafka transactions find-hanging``). Take the producer id and epoch, and the coordinator epoch,
        from :meth:`describe_producers`. A stale producer epoch raises InvalidProducerEpochError and a stale
        coordinator epoch TransactionCoordinatorFencedError; an unknown partition UnknownTopicOrPartitionError."""
        if not isinstance(spec, AbortTransactionSpec):
            raise TypeError(f"abort_transaction(spec=...) takes an AbortTransactionSpec, not {type(spec).__name__}")
        with self._lock:
            transactions.abort_transaction(self, spec, self._timer(timeout))

    # --- producers -----------------------------------------------------------------------------

    def describe_producers(self, partitions: Iterable[TP], timeout: float | None = None
                           ) -> dict[TopicPartition, list[ProducerState]]:
        """The active idempotent/transactional producers of each partition (keyed by TopicPartition), asked of its leader (Java
        ``describeProducers``): producer id and epoch, last sequence and timestamp, coordinator epoch and the
        start offset of its open transaction (None when none). Errors as :meth:`list_offsets`."""
        return offsets.describe_producers(self, partitions, timeout)


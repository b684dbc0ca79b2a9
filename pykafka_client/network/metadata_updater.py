"""How NetworkClient keeps cluster metadata fresh (Java ``NetworkClient.MetadataUpdater`` and its
``DefaultMetadataUpdater``, plus ``ManualMetadataUpdater``).

The DefaultMetadataUpdater piggy-backs on the NetworkClient's poll: when an update is due it sends a
MetadataRequest (built by :class:`Metadata`) to the least-loaded node as an internal request, and feeds
the response back into the Metadata. Topic errors in responses are logged at WARNING, each distinct set
at most once per ``metadata_warning_interval_ms`` (a producer waiting for a topic to be created would
otherwise log the same line at every retry).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Protocol

from pykafka_client.errors import for_code
from pykafka_client.network.client_request import RequestBody, RequestHeaderInfo
from pykafka_client.network.cluster_connection_states import MAX_DELAY_MS, ClusterConnectionStates
from pykafka_client.network.kafka_client import LeastLoadedNode
from pykafka_client.network.log_rate_limiter import LogRateLimiter
from pykafka_client.network.metadata import Metadata, oldest_metadata_version
from pykafka_client.protocol.messages import MetadataResponse
from pykafka_client.structs import Node

log = logging.getLogger(__name__)

#: The same metadata warning (same topics, same errors) is logged at most once per this interval.
DEFAULT_METADATA_WARNING_INTERVAL_MS = 60_000


class MetadataRecoveryStrategy(enum.Enum):
    NONE = "none"
    REBOOTSTRAP = "rebootstrap"


class UpdateDeadline(Protocol):
    """What :attr:`MetadataUpdater.update_deadline` is: a time (ms) read without a call."""

    @property
    def no_update_before_ms(self) -> int: ...


class _NeverDue:
    """The update deadline of an updater that never fetches metadata."""

    no_update_before_ms = MAX_DELAY_MS


class MetadataUpdater(Protocol):
    """How NetworkClient keeps metadata fresh (Java ``MetadataUpdater``).

    :attr:`update_deadline` lets the NetworkClient skip the per-request and per-poll questions while nothing can be
    due: at a time ``now`` before its ``no_update_before_ms``, :meth:`is_update_due` is False, :meth:`maybe_update`
    does nothing and returns ``no_update_before_ms - now`` (an updater that never fetches: at least a request
    timeout, as that one), and :meth:`needs_rebootstrap` is False. The NetworkClient reads the deadline instead of
    calling them then, and bounds its poll by ``no_update_before_ms - now``."""

    @property
    def update_deadline(self) -> UpdateDeadline: ...

    def fetch_nodes(self) -> list[Node]: ...

    def is_update_due(self, now_ms: int) -> bool: ...

    def maybe_update(self, now_ms: int) -> int:
        """Start an update if due; return ms until the next call is needed."""
        ...

    def handle_server_disconnect(self, now_ms: int, node_id: str, auth_exception: BaseException | None) -> None: ...

    def handle_failed_request(self, now_ms: int, fatal_exception: BaseException | None) -> None: ...

    def handle_successful_response(self, header: RequestHeaderInfo, now_ms: int, response: MetadataResponse) -> None: ...

    def request_update(self) -> None: ...

    def needs_rebootstrap(self, now_ms: int, rebootstrap_trigger_ms: int) -> bool:
        """True when updates have been failing for longer than ``rebootstrap_trigger_ms`` (never for an updater
        that does not fetch metadata)."""
        ...

    def rebootstrap(self) -> None:
        """Go back to the bootstrap servers (KIP-899)."""
        ...

    def close(self) -> None: ...


class MetadataRequestSender(Protocol):
    """What :class:`DefaultMetadataUpdater` uses of the NetworkClient it belongs to: pick a node, connect to
    it, send it a Metadata request outside the application's requests."""

    @property
    def connection_states(self) -> ClusterConnectionStates: ...

    def least_loaded_node(self, now_ms: int) -> LeastLoadedNode: ...

    def can_send_request(self, node_id: str, now_ms: int) -> bool: ...

    def is_any_node_connecting(self) -> bool: ...

    def initiate_connect(self, node: Node, now_ms: int) -> None: ...

    def send_internal_request(
        self,
        body: RequestBody,
        node_id: str,
        now_ms: int,
        latest_allowed_version: int | None = None,
        *,
        oldest_allowed_version: int | None = None,
    ) -> None: ...


@dataclass(slots=True)
class _InProgress:
    request_version: int
    is_partial: bool


class DefaultMetadataUpdater:
    """Refreshes a :class:`Metadata` through the NetworkClient it belongs to (piggy-backing on its poll)."""

    #: ``update_deadline`` in a slot: the kernel's client paths read it on every poll and ready, at its offset
    __slots__ = ("__dict__", "__weakref__", "update_deadline")

    def __init__(
        self,
        metadata: Metadata,
        client: MetadataRequestSender,
        request_timeout_ms: int,
        reconnect_backoff_ms: int,
        recovery_strategy: MetadataRecoveryStrategy,
        metadata_warning_interval_ms: int = DEFAULT_METADATA_WARNING_INTERVAL_MS,
    ) -> None:
        self.metadata = metadata
        self._client = client
        self._request_timeout_ms = request_timeout_ms
        self._reconnect_backoff_ms = reconnect_backoff_ms
        self._recovery_strategy = recovery_strategy
        self._in_progress: _InProgress | None = None
        self._warnings = LogRateLimiter(metadata_warning_interval_ms)
        #: the Metadata's own deadline: a successful update (which ends the fetch in progress, if any) sets it, an
        #: update requested or attempted (before a fetch starts) resets it, so no fetch is in progress before it
        self.update_deadline: UpdateDeadline = metadata

    def fetch_nodes(self) -> list[Node]:
        return list(self.metadata.fetch().nodes)

    def has_fetch_in_progress(self) -> bool:
        return self._in_progress is not None

    def is_update_due(self, now_ms: int) -> bool:
        return self._in_progress is None and self.metadata.time_to_next_update(now_ms) == 0

    def maybe_update(self, now_ms: int) -> int:
        time_to_next = self.metadata.time_to_next_update(now_ms)
        # the later of the next update and a fetch in progress's timeout
        if self._in_progress is not None and self._request_timeout_ms > time_to_next:
            return self._request_timeout_ms
        if time_to_next > 0:
            return time_to_next
        self.metadata.attempt_started(now_ms)
        least = self._client.least_loaded_node(now_ms)
        if self._recovery_strategy is MetadataRecoveryStrategy.REBOOTSTRAP and not (
            least.has_node_available_or_connection_ready()
        ):
            if self._warnings.should_log("rebootstrap", now_ms):
                repeats = self._warnings.take_suppressed()
                log.info("no broker of the cluster can be reached: rebootstrapping from bootstrap.servers%s",
                         f" (done {repeats} more time(s) since the last message)" if repeats else "")
            self.metadata.rebootstrap()
            least = self._client.least_loaded_node(now_ms)
        if least.node is None:
            log.debug("give up sending a metadata request since no node is available")
            return self._reconnect_backoff_ms
        return self._maybe_update(now_ms, least.node)

    def _maybe_update(self, now_ms: int, node: Node) -> int:
        node_id = node.id_string
        client = self._client
        if client.can_send_request(node_id, now_ms):
            body, is_partial = self.metadata.new_metadata_request()
            self._in_progress = _InProgress(self.metadata.update_version(), is_partial)
            client.send_internal_request(body, node_id, now_ms, oldest_allowed_version=oldest_metadata_version(body))
            return self._request_timeout_ms
        if client.is_any_node_connecting():
            # Wait for the connection in progress rather than opening another one.
            return self._reconnect_backoff_ms
        if client.connection_states.can_connect(node_id, now_ms):
            client.initiate_connect(node, now_ms)
            return self._reconnect_backoff_ms
        # Connected but cannot send more, or connecting: wait for a network event.
        return MAX_DELAY_MS

    def handle_server_disconnect(self, now_ms: int, node_id: str, auth_exception: BaseException | None) -> None:
        # any authentication failure (TLS, or SASL: SaslAuthenticationError, UnsupportedSaslMechanismError, ... are
        # broker error classes, not AuthenticationError subclasses) is fatal for the metadata waiters, as in Java
        if auth_exception is not None:
            self.metadata.fatal_error(auth_exception)
        # A disconnect while an update is due counts as a failed update, so that we back off.
        if self.is_update_due(now_ms):
            self.handle_failed_request(now_ms, None)

    def handle_failed_request(self, now_ms: int, fatal_exception: BaseException | None) -> None:
        if fatal_exception is not None:
            self.metadata.fatal_error(fatal_exception)
        self.metadata.failed_update(now_ms)
        self._in_progress = None

    def handle_successful_response(self, header: RequestHeaderInfo, now_ms: int, response: MetadataResponse) -> None:
        in_progress = self._in_progress
        self._in_progress = None
        if not response.brokers:
            # A broker still starting up may answer with no brokers: retry later.
            log.debug("ignoring empty metadata response with correlation id %d", header.correlation_id)
            self.metadata.failed_update(now_ms)
            return
        self._warn_topic_errors(response, now_ms)
        request_version = in_progress.request_version if in_progress else self.metadata.update_version()
        is_partial = in_progress.is_partial if in_progress else False
        self.metadata.update(request_version, response, is_partial, now_ms, response_version=header.api_version)

    def _warn_topic_errors(self, response: MetadataResponse, now_ms: int) -> None:
        errors = tuple(sorted((str(t.name), for_code(t.error_code).__name__) for t in response.topics if t.error_code))
        if not errors or not self._warnings.should_log(errors, now_ms):
            return
        suppressed = self._warnings.take_suppressed()
        repeats = f" (repeated {suppressed} times since last logged)" if suppressed else ""
        log.warning(
            "metadata response has errors for topics %s%s; the client keeps refreshing metadata and retries",
            ", ".join(f"{name}: {error}" for name, error in errors),
            repeats,
        )

    def request_update(self) -> None:
        self.metadata.request_update()

    def needs_rebootstrap(self, now_ms: int, rebootstrap_trigger_ms: int) -> bool:
        # Metadata.needs_rebootstrap, inlined: the NetworkClient asks after every poll
        start = self.metadata.attempt_start_ms
        return start is not None and now_ms - start > rebootstrap_trigger_ms

    def rebootstrap(self) -> None:
        self._in_progress = None
        self.metadata.rebootstrap()

    def close(self) -> None:
        self.metadata.close()


class ManualMetadataUpdater:
    """A fixed node list that is never refreshed (Java ``ManualMetadataUpdater``): for clients that
    manage their own metadata and for tests."""

    def __init__(self, nodes: list[Node] | None = None) -> None:
        self.nodes: list[Node] = list(nodes or [])
        #: never due: the questions it spares always have the same answers here
        self.update_deadline: UpdateDeadline = _NeverDue()

    def set_nodes(self, nodes: list[Node]) -> None:
        self.nodes = list(nodes)

    def fetch_nodes(self) -> list[Node]:
        return list(self.nodes)

    def is_update_due(self, now_ms: int) -> bool:
        return False

    def maybe_update(self, now_ms: int) -> int:
        return MAX_DELAY_MS

    def handle_server_disconnect(self, now_ms: int, node_id: str, auth_exception: BaseException | None) -> None:
        pass

    def handle_failed_request(self, now_ms: int, fatal_exception: BaseException | None) -> None:
        pass

    def handle_successful_response(self, header: RequestHeaderInfo, now_ms: int, response: MetadataResponse) -> None:
        pass

    def request_update(self) -> None:
        pass

    def needs_rebootstrap(self, now_ms: int, rebootstrap_trigger_ms: int) -> bool:
        return False  # a fixed node list: nothing to bootstrap again

    def rebootstrap(self) -> None:
        """Nothing to do: a fixed node list has no bootstrap servers to go back to (:meth:`needs_rebootstrap` is
        never True)."""

    def close(self) -> None:
        pass

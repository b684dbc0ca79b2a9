"""What the consumer needs from ConsumerNetworkClient, as a Protocol (Java: the parts of
``ConsumerNetworkClient`` used by KafkaConsumer, Fetcher, OffsetFetcher, TopicMetadataFetcher and the
coordinators).

Everything the consumer calls on its client is declared here, so no part of the consumer probes its
client with ``getattr``. ConsumerNetworkClient implements it; unit tests run the real
ConsumerNetworkClient over ``tests/doubles/mock_client.MockClient``.
"""

from __future__ import annotations

from typing import Any, Protocol

from pykafka_client.errors import KafkaTimeoutError
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.consumer_network_client import PollCondition
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.structs import Node
from pykafka_client.utils.time import Timer


class ConsumerClient(Protocol):
    def send(
        self,
        node: Node,
        body: Any,
        request_timeout_ms: int | None = None,
        *,
        oldest_allowed_version: int | None = None,
        latest_allowed_version: int | None = None,
    ) -> RequestFuture[ClientResponse]:
        """Queue a request; the future completes with the ClientResponse or fails (disconnect,
        timeout, authentication)."""
        ...

    def poll_future(self, future: RequestFuture[Any], timer: Timer) -> bool:
        """Drive I/O until ``future`` is done or the timer expires; True if done. Wakeup-enabled."""
        ...

    def poll(self, timer: Timer, poll_condition: PollCondition | None = None) -> None:
        """Drive I/O once, blocking at most until the timer expires (not at all when
        ``poll_condition.should_block()`` is False). Wakeup-enabled."""
        ...

    def poll_no_wakeup(self) -> None:
        """Drive I/O without blocking and without raising WakeupException."""
        ...

    def least_loaded_node(self) -> Node | None: ...

    def is_unavailable(self, node: Node) -> bool: ...

    def unreachable_reason(self) -> str | None:
        """Why no broker can be reached (each address tried with its last connection error), or None."""
        ...

    def has_pending_requests(self, node: Node | None = None) -> bool: ...

    def await_metadata_update(self, timer: Timer) -> bool: ...

    def wakeup(self) -> None:
        """Make the current (or next) wakeup-enabled poll raise WakeupException; any thread."""
        ...

    def maybe_trigger_wakeup(self) -> None:
        """Raise WakeupException now if ``wakeup()`` was called since the last one was raised."""
        ...

    def disconnect_async(self, node: Node) -> None: ...

    def close(self) -> None:
        """Close every connection (the consumer's close)."""
        ...


def timeout_error(client: ConsumerClient, message: str, otherwise: str | None = None) -> KafkaTimeoutError:
    """A KafkaTimeoutError saying ``message`` and, when no broker could be reached, why: each address tried
    with its last connection error (else ``otherwise``, when given)."""
    reason = client.unreachable_reason() or otherwise
    return KafkaTimeoutError(f"{message}: {reason}" if reason is not None else message)

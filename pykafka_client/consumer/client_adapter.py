"""What the consumer needs from ConsumerNetworkClient, as a Protocol (Java: the parts of
``ConsumerNetworkClient`` used by Fetcher, OffsetFetcher and the coordinators).

Kept narrow so consumer components can be unit-tested with a scripted fake, and so the consumer is
insulated from small naming differences in the network layer.
"""

from __future__ import annotations

from typing import Any, Protocol

from pykafka_client.network.client_response import ClientResponse
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

    def poll(self, timer: Timer, poll_condition: Any = None) -> None:
        """Drive I/O once, blocking at most until the timer expires (not at all when
        ``poll_condition.should_block()`` is False). Wakeup-enabled."""
        ...

    def poll_no_wakeup(self) -> None:
        """Drive I/O without blocking and without raising WakeupException."""
        ...

    def least_loaded_node(self) -> Node | None: ...

    def is_unavailable(self, node: Node) -> bool: ...

    def has_pending_requests(self, node: Node | None = None) -> bool: ...

    def await_metadata_update(self, timer: Timer) -> bool: ...

    def wakeup(self) -> None: ...

    def disconnect_async(self, node: Node) -> None: ...

"""Why a node could not be connected to: the last failed connection attempt per node, typed.

NetworkClient records a :class:`ConnectFailure` each time a connection to a node fails before the node became
ready (the connect was refused, the host name did not resolve, no connection within the setup timeout, the
connection closed before the broker answered ApiVersions, authentication failed) and forgets it once the node
is ready. Callers that time out waiting for a broker (the producer's ``max.block.ms``, the admin client's and
the consumer's API timeouts) read the records through
:meth:`~pykafka_client.network.network_client.NetworkClient.unreachable_reason` and say why in their
exception: the addresses tried and the last error of each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pykafka_client.network.error_text import ConnectFailureCause

__all__ = ["ConnectFailure", "ConnectFailureCause", "describe_unreachable"]


@dataclass(frozen=True, slots=True)
class ConnectFailure:
    """The last failed connection attempt to one node (cleared once the node is ready).

    ``address`` is ``host:port`` as the bootstrap list or the metadata names the node; ``resolved_address``
    the ``ip:port`` the attempt went to (None when the name did not resolve); ``detail`` the cause in words,
    with what the user can check; ``error`` the exception behind it, if any.
    """

    node_id: str
    address: str
    resolved_address: str | None
    cause: ConnectFailureCause
    detail: str
    time_ms: int
    error: BaseException | None = None

    def describe(self) -> str:
        """``localhost:9092 (127.0.0.1:9092): connection refused``."""
        where = self.address
        if self.resolved_address is not None and self.resolved_address != self.address:
            where = f"{where} ({self.resolved_address})"
        return f"{where}: {self.detail}"


def describe_unreachable(failures: Sequence[ConnectFailure], connecting: Sequence[str]) -> str:
    """Why no broker could be reached, for an exception: each address tried with its last error, then the
    ones still connecting. ``connecting`` holds ready-made ``host:port (...)`` texts."""
    parts = [f.describe() for f in failures] + list(connecting)
    return (
        "could not connect to any broker: " + "; ".join(parts) + ". Check that a broker is running there and that"
        " bootstrap.servers names its listener (host:port, and security.protocol matching the listener)"
    )

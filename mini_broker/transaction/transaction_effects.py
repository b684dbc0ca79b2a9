"""What the transaction coordinator's sans-IO core asks its driver to do, as values.

A call into the core (:class:`Step`: the config, ``now`` and the effects so far) changes transactional
ids' state and emits, in order:

* responses: :class:`SendInitProducerIdResponse`, :class:`SendErrorResponse` (a reply handle and its
  answer);
* log appends to ``__transaction_state``: :class:`AppendTxnState` (a tombstone when the state is Dead).
  The driver makes the record durable and then hands the effect back (``TransactionCore.on_append_complete``
  with the append's error code), which completes the pending transition and sends the reply it carries;
* marker writes: :class:`WriteTxnMarkers`, a ``WriteTxnMarkersRequest`` for the driver to send through the
  broker's :class:`~mini_broker.transaction.seams.TxnMarkerWriter`; the per-partition answers go back to
  ``TransactionCore.on_markers_written``;
* timer effects: :class:`ScheduleMarkerRetry` (send the markers still missing again after a delay:
  ``TransactionCore.retry_markers``). The periodic sweeps (timed-out transactions, expired ids) are the
  driver's own timers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mini_broker.transaction.transaction_config import TransactionConfig
from mini_broker.transaction.transaction_metadata import TxnTransitMetadata
from mini_broker.transaction.transaction_requests import (
    ErrorCallback,
    InitProducerIdCallback,
    InitProducerIdResult,
)
from pykafka_client.protocol.messages import WriteTxnMarkersRequest


# -- responses --------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SendInitProducerIdResponse:
    reply: InitProducerIdCallback
    result: InitProducerIdResult


@dataclass(frozen=True, slots=True)
class SendErrorResponse:
    reply: ErrorCallback
    error_code: int


Response = SendInitProducerIdResponse | SendErrorResponse


# -- log appends ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AppendTxnState:
    """Append ``transit`` for ``transactional_id`` (a tombstone for Dead), durably; then hand this effect
    back with the append's error code. ``response`` is what to answer once the append succeeded (None:
    nobody waits); on failure the core answers the same reply with the error."""

    transactional_id: str
    transit: TxnTransitMetadata
    response: Response | None = None


# -- marker writes ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WriteTxnMarkers:
    transactional_id: str
    request: WriteTxnMarkersRequest


# -- timers -----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ScheduleMarkerRetry:
    transactional_id: str
    delay_ms: int


Effect = SendInitProducerIdResponse | SendErrorResponse | AppendTxnState | WriteTxnMarkers | ScheduleMarkerRetry


@dataclass
class Step:
    """One call into the core: what it may read (``config``, ``now``) and what it emitted."""

    config: TransactionConfig
    now: int
    effects: list[Effect] = field(default_factory=list)

    def emit(self, effect: Effect) -> None:
        self.effects.append(effect)

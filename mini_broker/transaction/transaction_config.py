"""The transaction coordinator's settings (Kafka's ``TransactionStateManagerConfig`` /
``TransactionLogConfig`` names in snake_case)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TransactionConfig:
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3600000
    transaction_state_log_segment_bytes: int = 104857600
    #: How long markers that failed to be written wait before they are sent again.
    marker_retry_backoff_ms: int = 100

    @classmethod
    def from_broker(cls, get: Callable[[str], object]) -> TransactionConfig:
        """From broker configs; ``get(name)`` returns the value (defaults applied) or None."""
        d = cls()

        def val(name: str, default: int) -> int:
            v = get(name)
            return default if v is None else int(str(v))

        return cls(
            transaction_max_timeout_ms=val("transaction.max.timeout.ms", d.transaction_max_timeout_ms),
            transactional_id_expiration_ms=val("transactional.id.expiration.ms", d.transactional_id_expiration_ms),
            transaction_abort_timed_out_transaction_cleanup_interval_ms=val(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                d.transaction_abort_timed_out_transaction_cleanup_interval_ms),
            transaction_remove_expired_transaction_cleanup_interval_ms=val(
                "transaction.remove.expired.transaction.cleanup.interval.ms",
                d.transaction_remove_expired_transaction_cleanup_interval_ms),
            transaction_state_log_segment_bytes=val("transaction.state.log.segment.bytes",
                                                    d.transaction_state_log_segment_bytes),
        )

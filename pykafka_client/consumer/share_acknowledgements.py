"""Share consumer acknowledgements (Java: AcknowledgeType, Acknowledgements; KIP-932), sans-IO.

The records a share consumer has delivered are held per partition until acknowledged; an acknowledgement
maps an offset to ACCEPT (processed), RELEASE (hand it back for another delivery) or REJECT (never deliver
it again). :func:`acknowledgement_batches` turns a partition's acknowledgements into the wire's batches:
runs of consecutive offsets with one type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import IntEnum

from pykafka_client.errors import IllegalStateError
from pykafka_client.structs import TopicPartition


class AcknowledgeType(IntEnum):
    """How a delivered record is acknowledged (the wire's values; 0 is the protocol's gap marker)."""

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


#: the wire's acknowledge type of an acquired offset that holds no record to deliver (a transaction marker)
GAP = 0


def acknowledgement_batches(acks: Mapping[int, int]) -> list[tuple[int, int, int]]:
    """``(first_offset, last_offset, type)`` for each run of consecutive offsets acknowledged alike."""
    out: list[tuple[int, int, int]] = []
    for offset in sorted(acks):
        kind = int(acks[offset])
        if out and out[-1][1] == offset - 1 and out[-1][2] == kind:
            out[-1] = (out[-1][0], offset, kind)
        else:
            out.append((offset, offset, kind))
    return out


class ShareAcknowledgements:
    """What the consumer holds (delivered, not yet acknowledged) and what it has acknowledged but not yet
    sent, per partition. ``explicit`` mode requires every delivered record to be acknowledged before the
    next poll; implicit mode accepts all of them at the next poll or commit."""

    def __init__(self, explicit: bool) -> None:
        self.explicit = explicit
        self._held: dict[TopicPartition, set[int]] = {}
        self._pending: dict[TopicPartition, dict[int, int]] = {}

    def delivered(self, tp: TopicPartition, offsets: Iterable[int]) -> None:
        self._held.setdefault(tp, set()).update(offsets)

    def acknowledge(self, tp: TopicPartition, offset: int, kind: AcknowledgeType) -> None:
        """Record an explicit acknowledgement of a record this consumer holds."""
        if not self.explicit:
            raise IllegalStateError(
                "acknowledge() needs share.acknowledgement.mode=explicit: in implicit mode the next poll or "
                "commit accepts the records; set share.acknowledgement.mode to explicit to acknowledge each")
        held = self._held.get(tp)
        if held is None or offset not in held:
            raise IllegalStateError(
                f"record {tp.topic}-{tp.partition}@{offset} is not held by this consumer (already acknowledged, "
                "or not delivered by its last poll): acknowledge only records of the latest poll, once each")
        held.discard(offset)
        if not held:
            del self._held[tp]
        self._pending.setdefault(tp, {})[offset] = int(AcknowledgeType(kind))

    def gaps(self, tp: TopicPartition, offsets: Iterable[int]) -> None:
        """Acquired offsets without a record for the application: acknowledged as gaps with the next request."""
        pending = self._pending.setdefault(tp, {})
        for offset in offsets:
            pending[offset] = GAP

    def held_count(self) -> int:
        return sum(len(offsets) for offsets in self._held.values())

    def check_all_acknowledged(self) -> None:
        """Explicit mode: raise if a record of the previous poll was not acknowledged (Java's rule)."""
        if self.explicit and self._held:
            tp, offsets = next(iter(self._held.items()))
            raise IllegalStateError(
                f"{self.held_count()} records of the previous poll are unacknowledged (e.g. {tp.topic}-"
                f"{tp.partition}@{min(offsets)}): in explicit mode acknowledge every record before polling again")

    def settle_held(self, kind: AcknowledgeType) -> None:
        """Acknowledge everything still held with ``kind`` (implicit mode's accept; release on close)."""
        for tp, offsets in self._held.items():
            pending = self._pending.setdefault(tp, {})
            for offset in offsets:
                pending[offset] = int(kind)
        self._held.clear()

    def drain(self) -> dict[TopicPartition, list[tuple[int, int, int]]]:
        """The pending acknowledgements as wire batches per partition, forgetting them."""
        out = {tp: acknowledgement_batches(acks) for tp, acks in self._pending.items() if acks}
        self._pending.clear()
        return out

    def has_pending(self) -> bool:
        return any(self._pending.values())

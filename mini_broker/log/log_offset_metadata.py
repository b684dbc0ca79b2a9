"""A log position: offset plus where it is on disk (Java LogOffsetMetadata), and fetch isolation levels."""

from __future__ import annotations

import enum
from typing import NamedTuple

UNKNOWN_OFFSET = -1
UNKNOWN_FILE_POSITION = -1


class FetchIsolation(enum.Enum):
    """How far a fetch may read: the log end (followers), the high watermark (read_uncommitted
    consumers) or the last stable offset (read_committed consumers)."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


class LogOffsetMetadata(NamedTuple):
    """``message_offset`` and, when known, the segment holding it and the byte position in that segment (a named
    tuple: every append makes the log end's).

    ``segment_base_offset == -1`` means only the offset is known ("message offset only"): such a value
    cannot be compared by segment or subtracted by position.
    """

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = UNKNOWN_FILE_POSITION

    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET and self.relative_position_in_segment == UNKNOWN_FILE_POSITION

    def on_older_segment(self, that: LogOffsetMetadata) -> bool:
        """True if this position is on an older segment than ``that`` (both must have segment info)."""
        if self.message_offset_only() or that.message_offset_only():
            raise ValueError(f"{self} cannot be compared by segment with {that}")
        return self.segment_base_offset < that.segment_base_offset

    def on_same_segment(self, that: LogOffsetMetadata) -> bool:
        if self.message_offset_only() or that.message_offset_only():
            raise ValueError(f"{self} cannot be compared by segment with {that}")
        return self.segment_base_offset == that.segment_base_offset

    def position_diff(self, that: LogOffsetMetadata) -> int:
        """Bytes from ``that`` to this position; both must be on the same segment."""
        if not self.on_same_segment(that):
            raise ValueError(f"{self} and {that} are not on the same segment")
        return self.relative_position_in_segment - that.relative_position_in_segment


UNKNOWN_OFFSET_METADATA = LogOffsetMetadata(UNKNOWN_OFFSET)

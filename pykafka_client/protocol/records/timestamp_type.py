"""How a batch's timestamps were assigned (Java ``TimestampType``); re-exported by ``record_batch``."""

from __future__ import annotations

from enum import IntEnum


class TimestampType(IntEnum):
    """How a batch's timestamps were assigned (Java ``TimestampType``)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

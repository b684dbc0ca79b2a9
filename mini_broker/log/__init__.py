"""The on-disk log (Java kafka.log / storage.internals.log): segments, indexes, partition logs, LogManager."""

from __future__ import annotations

from mini_broker.log.fetch_data_info import FetchDataInfo, LogAppendInfo, TimestampAndOffset
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_manager import LogManager
from mini_broker.log.log_offset_metadata import FetchIsolation, LogOffsetMetadata
from mini_broker.log.log_validator import AppendOrigin
from mini_broker.log.unified_log import Log

__all__ = [
    "AppendOrigin",
    "FetchDataInfo",
    "FetchIsolation",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "LogManager",
    "LogOffsetMetadata",
    "TimestampAndOffset",
]

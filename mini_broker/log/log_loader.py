"""Opening a partition directory (Java ``LogLoader``): clean up, find the segments, recover what may be torn.

Swap files first (a log cleaner's segment caught between its two renames, Kafka's ``.swap`` recovery):
``<base>.log.swap`` holds every retained record of the segments it replaces, so the ``.log`` segments whose
base offset lies in ``[base, its next offset)`` are deleted and the swap files lose their suffix. Then stray
files (``.deleted``, ``.cleaned`` (a clean that had not finished: its sources are intact), ``.tmp``) and
index files without their ``.log`` are removed. Every segment from the one holding the recovery point (all of them after an unclean shutdown
without a recovery checkpoint), and always the last segment, are re-read batch by batch: indexes are
rebuilt and the file is cut after the last valid batch (a torn tail), and segments after a cut are
deleted, so nothing past a torn write is ever served. Other segments keep their index files unless those
are missing or fail a sanity check, in which case they are rebuilt the same way. ``*.snapshot`` files are
the producer state's and are left alone.
"""

from __future__ import annotations

import logging
import os
import struct
from bisect import bisect_right
from collections.abc import Iterator
from typing import BinaryIO, Final

from mini_broker.log.abstract_index import CorruptIndexError
from mini_broker.log.log_config import LogConfig
from mini_broker.log.log_segment import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    LogSegment,
    file_name_prefix,
)
from mini_broker.log.transaction_index import TXN_INDEX_FILE_SUFFIX
from pykafka_client.utils.time import Time

_log = logging.getLogger(__name__)

CLEANED_FILE_SUFFIX: Final = ".cleaned"
SWAP_FILE_SUFFIX: Final = ".swap"
STRAY_SUFFIXES: Final = (".deleted", CLEANED_FILE_SUFFIX, ".tmp")
_SEGMENT_FILE_SUFFIXES: Final = (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)


def load_segments(
    dir_path: str, config: LogConfig, time: Time, *, log_start_offset: int, recovery_point: int,
    had_clean_shutdown: bool,
) -> list[LogSegment]:
    """The segments of ``dir_path``, oldest first and recovered as the module docstring says; never empty (a
    directory without segments gets one at ``log_start_offset``)."""
    bases = _remove_strays_and_find_segments(dir_path)
    segments = [LogSegment(dir_path, base, config, time) for base in bases]
    if not segments:
        segments = [LogSegment(dir_path, log_start_offset, config, time)]
    # Which segments to re-read: from the one holding the recovery point, and always the last.
    recover_from = len(segments) - 1
    if not had_clean_shutdown:
        recover_from = max(0, bisect_right(bases, recovery_point) - 1) if bases else 0
    kept: list[LogSegment] = []
    for i, segment in enumerate(segments):
        truncated = 0
        if i >= recover_from:
            truncated = segment.recover()
        else:
            try:
                if not segment.index_files_existed and segment.size:
                    raise CorruptIndexError(f"index files of {segment!r} are missing")
                segment.sanity_check_indexes(segment.next_offset())
                segment.txn_index.sanity_check()
            except (CorruptIndexError, ValueError) as e:
                _log.warning("%s: rebuilding the indexes of %r: %s", dir_path, segment, e)
                truncated = segment.recover()
        kept.append(segment)
        if truncated:
            _log.warning("%s: truncated %d bytes of a torn or corrupt tail in %r", dir_path, truncated, segment)
            for later in segments[i + 1 :]:
                _log.warning("%s: deleting %r, which follows a truncated segment", dir_path, later)
                later.delete()
                later.close()
            break
    return kept


def _remove_strays_and_find_segments(dir_path: str) -> list[int]:
    """Finish swaps, remove stray files and orphan indexes; the base offsets of the ``.log`` files, sorted."""
    _complete_swaps(dir_path)
    bases: list[int] = []
    for name in os.listdir(dir_path):
        if name.endswith(STRAY_SUFFIXES):
            os.unlink(os.path.join(dir_path, name))
        elif name.endswith(LOG_FILE_SUFFIX) and name[: -len(LOG_FILE_SUFFIX)].isdigit():
            bases.append(int(name[: -len(LOG_FILE_SUFFIX)]))
    base_set = set(bases)
    for name in os.listdir(dir_path):
        for suffix in (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX):
            stem = name[: -len(suffix)]
            if name.endswith(suffix) and stem.isdigit() and int(stem) not in base_set:
                os.unlink(os.path.join(dir_path, name))  # an index without its segment
    return sorted(bases)


def _complete_swaps(dir_path: str) -> None:
    """Finish the segment swaps a crash interrupted (see the module docstring)."""
    swap_log = LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX
    for name in sorted(os.listdir(dir_path)):
        stem = name[: -len(swap_log)]
        if not name.endswith(swap_log) or not stem.isdigit():
            continue
        base = int(stem)
        end = _next_offset_of_file(os.path.join(dir_path, name), base)
        for other in os.listdir(dir_path):
            other_stem = other[: -len(LOG_FILE_SUFFIX)]
            if other.endswith(LOG_FILE_SUFFIX) and other_stem.isdigit() and base <= int(other_stem) < max(end, base + 1):
                _log.info("%s: deleting %s, replaced by the cleaned segment %s", dir_path, other, name)
                for suffix in _SEGMENT_FILE_SUFFIXES:
                    path = os.path.join(dir_path, other_stem + suffix)
                    if os.path.exists(path):
                        os.unlink(path)
        for suffix in _SEGMENT_FILE_SUFFIXES:
            swap = os.path.join(dir_path, file_name_prefix(base) + suffix + SWAP_FILE_SUFFIX)
            if os.path.exists(swap):
                os.replace(swap, swap[: -len(SWAP_FILE_SUFFIX)])
        _log.warning("%s: completed the interrupted swap of cleaned segment %d", dir_path, base)
    for name in os.listdir(dir_path):  # index swaps without their log: nothing to finish
        if name.endswith(SWAP_FILE_SUFFIX):
            os.unlink(os.path.join(dir_path, name))


def _next_offset_of_file(path: str, base: int) -> int:
    """The offset after the last whole batch of a segment file (``base`` when it has none)."""
    next_offset = base
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        for position, base_offset, length, last_delta in _file_headers(fh, size):
            if position + length + 12 > size:
                break
            next_offset = base_offset + last_delta + 1
    return next_offset


_TRUNCATE_HEADER = struct.Struct(">qi4xb4xhi")  # base offset, length, magic, attributes, last offset delta


def _file_headers(fh: BinaryIO, size: int) -> Iterator[tuple[int, int, int, int]]:
    """(position, base offset, length, last offset delta) of each batch header of an open segment file, up to
    the first header that does not fit or has no length."""
    position = 0
    while position + _TRUNCATE_HEADER.size <= size:
        fh.seek(position)
        base_offset, length, _, _, last_delta = _TRUNCATE_HEADER.unpack(fh.read(_TRUNCATE_HEADER.size))
        if length <= 0:
            return
        yield position, base_offset, length, last_delta
        position += length + 12


def truncate_files_to(dir_path: str, offset: int) -> int:
    """Cut the closed log in ``dir_path`` so that no batch holding an offset >= ``offset`` remains (a batch that
    straddles ``offset`` goes whole, as Kafka's ``LogSegment.truncateTo``); later segments are deleted. Returns
    the base offset of the segment that was cut (where recovery must start)."""
    bases = _remove_strays_and_find_segments(dir_path)
    if not bases:
        return 0
    keep = [b for b in bases if b <= offset] or [bases[0]]
    cut = keep[-1]
    for base in bases:
        if base > cut:
            for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX):
                path = os.path.join(dir_path, file_name_prefix(base) + suffix)
                if os.path.exists(path):
                    os.unlink(path)
    path = os.path.join(dir_path, file_name_prefix(cut) + LOG_FILE_SUFFIX)
    with open(path, "r+b") as fh:
        size = os.fstat(fh.fileno()).st_size
        position = 0
        for batch_position, base_offset, length, last_delta in _file_headers(fh, size):
            if base_offset + last_delta >= offset:
                break
            position = batch_position + length + 12
        fh.truncate(position)
        fh.flush()
        os.fsync(fh.fileno())
    return cut

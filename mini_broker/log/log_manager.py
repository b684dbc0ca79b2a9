"""All partition logs of a broker (Java LogManager): data directories, loading, retention and flush
scheduling, checkpoints, clean shutdown.

Each data directory holds ``<topic>-<partition>`` log directories plus three files: the recovery point
and log start offset checkpoints (:mod:`mini_broker.log.checkpoint`) and ``.kafka_cleanshutdown``,
written last on a clean :meth:`shutdown` (not after a failed start) and removed on :meth:`startup`: its
absence at startup, when there are logs to load, means the previous run crashed, and every log then
recovers from its recovery point (logged at WARNING). A directory with no logs yet is just new.
The broker holds the directory's lock (:mod:`mini_broker.log.data_dir_lock`) around all of this.

Periodic work (:meth:`scheduled_tasks`): retention (``log.retention.check.interval.ms``, 300000), flush
of logs whose ``flush.ms`` has passed (``log.flush.scheduler.interval.ms``), and the two checkpoints
(``log.flush.offset.checkpoint.interval.ms`` and ``log.flush.start.offset.checkpoint.interval.ms``,
60000 each), and producer-id expiry (``producer.id.expiration.check.interval.ms``, 600000: producers idle for
``producer.id.expiration.ms`` are forgotten by every log's producer state). :meth:`startup` runs them on a ``kafka-log-manager`` thread unless told not to, so a
broker with its own scheduler (or a test with a ``MockTime``) can call them itself.

Compaction: :attr:`cleaner` (:mod:`mini_broker.log.log_cleaner`) cleans the logs whose ``cleanup.policy``
holds ``compact`` on its own threads, started with the scheduler and stopped first at :meth:`shutdown`;
truncation and deletion bring its ``cleaner-offset-checkpoint`` down with the log.

Lock order: the manager lock (the log table) -> a log's lock. Logs are created and deleted under the
manager lock; lookups read the table without it (a dict read is atomic).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from mini_broker.log.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpointFile,
)
from mini_broker.log.local_log import log_dir_name, parse_topic_partition
from mini_broker.log.log_cleaner import CleanerConfig, LogCleaner
from mini_broker.log.log_config import LONG_MAX, LogConfig
from mini_broker.log.log_loader import truncate_files_to
from mini_broker.log.unified_log import Log
from mini_broker.producer_state.producer_state_manager import DEFAULT_PRODUCER_ID_EXPIRATION_MS
from pykafka_client.errors import KafkaStorageError
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.time import SYSTEM_TIME, Time

_log = logging.getLogger(__name__)

DEFAULT_RETENTION_CHECK_INTERVAL_MS: Final = 300000
DEFAULT_CHECKPOINT_INTERVAL_MS: Final = 60000
DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: Final = 600000

class LogManager:
    """Owns every :class:`Log` of the broker."""

    def __init__(
        self,
        log_dirs: Sequence[str],
        default_config: LogConfig | None = None,
        time: Time = SYSTEM_TIME,
        *,
        retention_check_interval_ms: int = DEFAULT_RETENTION_CHECK_INTERVAL_MS,
        flush_check_interval_ms: int = LONG_MAX,
        recovery_point_checkpoint_interval_ms: int = DEFAULT_CHECKPOINT_INTERVAL_MS,
        log_start_offset_checkpoint_interval_ms: int = DEFAULT_CHECKPOINT_INTERVAL_MS,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        producer_id_expiration_check_interval_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
        cleaner_config: CleanerConfig | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log directory is needed")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.default_config = default_config if default_config is not None else LogConfig()
        self._time = time
        self._lock = threading.RLock()
        #: keyed by TopicPartition; a plain (topic, partition) tuple finds the same entry (get_log, per request)
        self._logs: dict[tuple[str, int], Log] = {}
        self._log_dir_of: dict[tuple[str, int], str] = {}
        self._topic_configs: dict[str, LogConfig] = {}
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._intervals = {
            "kafka-log-retention": retention_check_interval_ms,
            "kafka-log-flusher": flush_check_interval_ms,
            "kafka-recovery-point-checkpoint": recovery_point_checkpoint_interval_ms,
            "kafka-log-start-offset-checkpoint": log_start_offset_checkpoint_interval_ms,
            "PeriodicProducerExpirationCheck": producer_id_expiration_check_interval_ms,
        }
        #: logs kept outside the table that the cleaner compacts too (:meth:`register_for_cleaning`)
        self._extra_cleanable: dict[tuple[str, int], Log] = {}
        #: the log cleaner (compaction of ``cleanup.policy=compact`` logs); its threads start with the scheduler
        self.cleaner = LogCleaner(
            cleaner_config if cleaner_config is not None else CleanerConfig(), self.log_dirs,
            lambda: {**self._extra_cleanable, **self._logs}, time,
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self._shut_down = False

    # -- start / stop ---------------------------------------------------------------------------------
    def startup(self, topic_configs: Mapping[str, LogConfig] | None = None, start_scheduler: bool = True) -> None:
        """Load every log of every data directory (recovering as needed), then start the periodic tasks."""
        with self._lock:
            if self._started:
                return
            self._started = True
            if topic_configs:
                self._topic_configs.update(topic_configs)
            for log_dir in self.log_dirs:
                self._load_logs(log_dir)
        if start_scheduler:
            self._thread = threading.Thread(target=self._run_scheduler, name="kafka-log-manager", daemon=True)
            self._thread.start()
            self.cleaner.startup()

    def _load_logs(self, log_dir: str) -> None:
        os.makedirs(log_dir, exist_ok=True)
        marker = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        if clean:
            os.unlink(marker)
        recovery_points = OffsetCheckpointFile(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT_FILE)).read()
        start_offsets = OffsetCheckpointFile(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT_FILE)).read()
        found: list[tuple[TopicPartition, str]] = []
        for name in sorted(os.listdir(log_dir)):
            path = os.path.join(log_dir, name)
            if not os.path.isdir(path):
                continue
            try:
                found.append((TopicPartition(*parse_topic_partition(name)), path))
            except ValueError:
                continue
        if found and not clean:
            _log.warning("%s: no clean-shutdown marker: the previous broker stopped without a clean shutdown; "
                         "recovering %d logs from their recovery points", log_dir, len(found))
        for tp, path in found:
            if tp in self._logs:
                raise KafkaStorageError(
                    f"duplicate log directories for {tp[0]}-{tp[1]}: {path} and {self._log_dir_of[tp]}"
                )
            log = Log(
                path,
                self.config_for(tp[0]),
                log_start_offset=start_offsets.get(tp, 0),
                recovery_point=recovery_points.get(tp, 0),
                had_clean_shutdown=clean,
                time=self._time,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
            )
            self._logs[tp] = log
            self._log_dir_of[tp] = log_dir
        _log.info("loaded %d logs from %s", len(found), log_dir)

    def shutdown(self, clean: bool = True) -> None:
        """Stop the scheduler, close (fsync) every log, write the checkpoints and, when ``clean`` (not after a
        failed start), the clean-shutdown markers."""
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
        self._stop.set()
        self.cleaner.shutdown()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            for log in self._logs.values():
                log.close()
            self.checkpoint_recovery_offsets()
            self.checkpoint_log_start_offsets()
            for log_dir in self.log_dirs if clean else ():
                with open(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE), "w", encoding="utf-8"):
                    pass

    # -- the log table --------------------------------------------------------------------------------
    def config_for(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self.default_config)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    @property
    def logs_by_partition(self) -> Mapping[tuple[str, int], Log]:
        """The logs by (topic, partition), live (the map :meth:`get_log` reads; the same object for the manager's
        life: a single broker's compiled produce append is lent it)."""
        return self._logs

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def logs_by_dir(self) -> dict[str, list[Log]]:
        """Each log directory (all of them, empty ones too) with the logs it holds."""
        with self._lock:
            out: dict[str, list[Log]] = {d: [] for d in self.log_dirs}
            for tp, lg in self._logs.items():
                out[self._log_dir_of[tp]].append(lg)
            return out

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The log of ``topic``-``partition``, created (in the data directory with the fewest logs) if
        missing. ``config`` sets the topic's config for this and the topic's other partitions."""
        with self._lock:
            tp = TopicPartition(topic, partition)
            if config is not None:
                self._topic_configs[topic] = config
            existing = self._logs.get(tp)
            if existing is not None:
                return existing
            if len(self.log_dirs) == 1:  # (counting every log per creation made a thousand creations slow)
                log_dir = self.log_dirs[0]
            else:
                counts = {d: 0 for d in self.log_dirs}
                for d in self._log_dir_of.values():
                    counts[d] += 1
                log_dir = min(self.log_dirs, key=lambda d: counts[d])
            log = Log(
                os.path.join(log_dir, log_dir_name(topic, partition)),
                self.config_for(topic),
                had_clean_shutdown=True,
                time=self._time,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
            )
            self._logs[tp] = log
            self._log_dir_of[tp] = log_dir
            return log

    def truncate_to(self, topic: str, partition: int, offset: int) -> Log:
        """Truncate the partition's log so that it ends at or below ``offset`` (a follower after a leader change)
        and return the reopened log: the log is closed, its files cut (:func:`truncate_files_to`) and loaded
        again, which rebuilds the indexes and the producer state from what is left. Its high watermark is its
        new end; the caller sets the real one."""
        with self._lock:
            tp = TopicPartition(topic, partition)
            log = self._logs.get(tp)
            if log is None:
                raise KafkaStorageError(f"no log for {topic}-{partition}")
            if offset >= log.log_end_offset:
                return log
            _log.warning("event=log_truncated partition=%s-%s from=%d to=%d", topic, partition, log.log_end_offset,
                         offset)
            start = log.log_start_offset
            log.close()
            recover_from = truncate_files_to(log.dir_path, offset)
            new = Log(
                log.dir_path,
                self.config_for(topic),
                log_start_offset=min(start, offset),
                recovery_point=recover_from,
                had_clean_shutdown=False,
                time=self._time,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
            )
            self._logs[tp] = new
            self.cleaner.manager.truncate_checkpoint(new, offset)
            return new

    def truncate_fully_and_start_at(self, topic: str, partition: int, offset: int) -> Log:
        """Empty the partition's log and start it again at ``offset`` (a follower whose log end is below the
        leader's log start, Kafka's ``truncateFullyAndStartAt``): every file of the partition is deleted and
        an empty log with one segment at ``offset`` replaces it (no producer state, no leader epochs)."""
        with self._lock:
            tp = TopicPartition(topic, partition)
            log = self._logs.get(tp)
            if log is None:
                raise KafkaStorageError(f"no log for {topic}-{partition}")
            _log.warning("event=log_truncated_fully partition=%s-%s log_end=%d new_start=%d", topic, partition,
                         log.log_end_offset, offset)
            log.close()
            for name in os.listdir(log.dir_path):
                path = os.path.join(log.dir_path, name)
                if os.path.isfile(path):
                    os.unlink(path)
            new = Log(
                log.dir_path,
                self.config_for(topic),
                log_start_offset=offset,
                recovery_point=offset,
                had_clean_shutdown=True,
                time=self._time,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
            )
            self._logs[tp] = new
            self.cleaner.manager.remove_checkpoint(new)
        self.checkpoint_log_start_offsets()
        return new

    def register_for_cleaning(self, log: Log) -> None:
        """Let the cleaner compact ``log``, a log this manager does not own (a single broker's coordinator
        logs under ``__group_coordinator``); its cleaner checkpoint goes to the first data directory. The
        log's config decides (``cleanup.policy=compact``); its owner keeps appending, moving its high
        watermark and closing it, and calls :meth:`unregister_for_cleaning` before closing it."""
        with self._lock:
            self._extra_cleanable[(log.topic, log.partition)] = log

    def unregister_for_cleaning(self, log: Log) -> None:
        with self._lock:
            if self._extra_cleanable.get((log.topic, log.partition)) is log:
                del self._extra_cleanable[(log.topic, log.partition)]

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """Apply a new config to every existing and future partition of ``topic``."""
        with self._lock:
            self._topic_configs[topic] = config
            for (t, _), log in self._logs.items():
                if t == topic:
                    log.update_config(config)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close and remove the partition's directory. False if there was no such log."""
        with self._lock:
            log = self._logs.pop(TopicPartition(topic, partition), None)
            self._log_dir_of.pop(TopicPartition(topic, partition), None)
        if log is None:
            return False
        log.delete()
        self.cleaner.manager.remove_checkpoint(log)
        return True

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords on one partition, then a durable log start offset checkpoint. Returns the new
        log start offset. Raises ``KafkaStorageError`` if the log does not exist, ``OffsetOutOfRangeError``
        above the high watermark."""
        log = self.get_log(topic, partition)
        if log is None:
            raise KafkaStorageError(f"no log for {topic}-{partition}")
        start = log.delete_records_before(offset)
        self.checkpoint_log_start_offsets()
        return start

    # -- periodic tasks -------------------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """One retention pass over every log; returns the number of segments deleted."""
        deleted = 0
        for log in self.all_logs():
            try:
                deleted += log.delete_old_segments()
            except OSError:
                _log.exception("retention of %r failed", log)
        return deleted

    def flush_dirty_logs(self) -> None:
        now = self._time.milliseconds()
        for log in self.all_logs():
            try:
                log.flush_if_due(now)
            except OSError:
                _log.exception("flush of %r failed", log)

    def remove_expired_producers(self) -> int:
        """Forget, in every log, producers idle for ``producer.id.expiration.ms``; returns how many."""
        now = self._time.milliseconds()
        removed = 0
        for log in self.all_logs():
            removed += len(log.remove_expired_producers(now))
        return removed

    def checkpoint_recovery_offsets(self) -> None:
        self._write_checkpoint(RECOVERY_POINT_CHECKPOINT_FILE, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_checkpoint(LOG_START_OFFSET_CHECKPOINT_FILE, lambda log: log.log_start_offset)

    def _write_checkpoint(self, file_name: str, value: Callable[[Log], int]) -> None:
        with self._lock:
            # the checkpoint file takes plain (topic, partition) keys (OffsetCheckpointFile is shared with cluster/)
            by_dir: dict[str, dict[tuple[str, int], int]] = {d: {} for d in self.log_dirs}
            for tp, log in self._logs.items():
                by_dir[self._log_dir_of[tp]][tp] = value(log)
        for log_dir, offsets in by_dir.items():
            OffsetCheckpointFile(os.path.join(log_dir, file_name)).write(offsets)

    def scheduled_tasks(self) -> list[tuple[str, int, Callable[[], object]]]:
        """(name, interval ms, task) for a broker scheduler; :meth:`startup` runs them itself by default."""
        return [
            ("kafka-log-retention", self._intervals["kafka-log-retention"], self.cleanup_logs),
            ("kafka-log-flusher", self._intervals["kafka-log-flusher"], self.flush_dirty_logs),
            (
                "kafka-recovery-point-checkpoint",
                self._intervals["kafka-recovery-point-checkpoint"],
                self.checkpoint_recovery_offsets,
            ),
            (
                "kafka-log-start-offset-checkpoint",
                self._intervals["kafka-log-start-offset-checkpoint"],
                self.checkpoint_log_start_offsets,
            ),
            (
                "PeriodicProducerExpirationCheck",
                self._intervals["PeriodicProducerExpirationCheck"],
                self.remove_expired_producers,
            ),
        ]

    def _run_scheduler(self) -> None:
        tasks = self.scheduled_tasks()
        now = self._time.hi_res_clock_ms()
        due = {name: now + interval for name, interval, _ in tasks}
        while not self._stop.is_set():
            now = self._time.hi_res_clock_ms()
            for name, interval, task in tasks:
                if due[name] <= now:
                    try:
                        task()
                    except Exception:
                        _log.exception("log manager task %s failed", name)
                    due[name] = now + interval
            wait_ms = min(max(0, min(due.values()) - now), 1000)
            self._stop.wait(wait_ms / 1000.0)

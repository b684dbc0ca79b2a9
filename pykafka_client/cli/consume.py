"""``pykafka consume TOPIC...`` (Kafka's kafka-console-consumer.sh, with kcat's ``--format``).

Without ``--group`` the tool reads every partition (or ``--partition``) without committing; with
``--group`` it joins the group and commits what it printed when it stops. It stops after
``--max-messages``, after ``--idle-timeout`` seconds without a record, or on Ctrl-C, and then prints
``Processed a total of N messages`` on stderr."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType
from typing import Any, NamedTuple

from pykafka_client.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    check_partition,
    client_config,
    non_negative_int,
    partition_count,
    positive_float,
)
from pykafka_client.cli.output import info
from pykafka_client.cli.record_format import RecordFormat, RecordRenderer
from pykafka_client.consumer.kafka_consumer import KafkaConsumer
from pykafka_client.errors import WakeupException
from pykafka_client.structs import OffsetAndMetadata, TopicPartition

EPILOG = """examples:
  pykafka consume greetings --from-beginning --max-messages 10
  pykafka consume greetings --group readers --format '%p:%o %k=%s [%h]\\n'
  pykafka consume greetings --partition 0 --offset @1700000000000"""

COMMIT_INTERVAL_S = 5.0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(subparsers, "consume", "print records of topics", [common],
                    description=__doc__.split("\n\n", 1)[1] if __doc__ else None, epilog=EPILOG)
    p.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to read")
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset (default: the end)")
    p.add_argument("--group", metavar="GROUP", help="consume as a member of GROUP and commit what was printed")
    p.add_argument("--partition", type=non_negative_int, metavar="N", help="read only this partition (one topic, no --group)")
    p.add_argument("--offset", metavar="OFFSET",
                   help="with --partition: a number, earliest, latest or @TIMESTAMP_MS to start from")
    p.add_argument("--max-messages", type=non_negative_int, metavar="N", help="stop after this many records")
    p.add_argument("--idle-timeout", type=positive_float, metavar="SECONDS",
                   help="stop after this long without a record (default: never)")
    p.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"), default="read_uncommitted",
                   help="read_committed skips aborted transactional records (default read_uncommitted)")
    p.add_argument("--format", metavar="FMT",
                   help="kcat-style output: %%t topic, %%p partition, %%o offset, %%T timestamp, %%k key, %%s value, "
                        "%%h headers, %%K/%%S key/value length, %%%% percent; escapes \\n \\r \\t \\\\ "
                        "(default '%%s\\n')")
    p.add_argument("--print-key", action="store_true", help="print KEY<TAB>VALUE (when no --format)")
    p.set_defaults(run=run)


def _check_flags(args: argparse.Namespace) -> None:
    if args.offset is not None and args.partition is None:
        raise CliError("--offset needs --partition (which partition to start in)", EXIT_USAGE)
    if args.partition is not None and args.group:
        raise CliError("--partition cannot be used with --group (the group assigns partitions)", EXIT_USAGE)
    if args.partition is not None and len(args.topics) > 1:
        raise CliError("--partition needs exactly one TOPIC", EXIT_USAGE)
    if args.offset is not None and args.from_beginning:
        raise CliError("use either --offset or --from-beginning", EXIT_USAGE)


def start_at(args: argparse.Namespace) -> tuple[str, int]:
    """Where reading starts, from --offset / --from-beginning: ("earliest" | "latest", 0), ("offset", N) or
    ("timestamp", MS); a bad --offset is a usage error (before anything connects)."""
    spec = args.offset if args.offset is not None else ("earliest" if args.from_beginning else "latest")
    if spec in ("earliest", "latest"):
        return spec, 0
    if spec.startswith("@"):
        try:
            return "timestamp", int(spec[1:])
        except ValueError:
            raise CliError(f"--offset {spec!r}: expected @TIMESTAMP_MS, e.g. @1700000000000", EXIT_USAGE) from None
    try:
        offset = int(spec)
    except ValueError:
        raise CliError(f"--offset {spec!r}: expected a number, earliest, latest or @TIMESTAMP_MS", EXIT_USAGE) from None
    if offset < 0:
        raise CliError(f"--offset {spec!r} must not be negative", EXIT_USAGE)
    return "offset", offset


def _position(consumer: KafkaConsumer[Any, Any], tps: list[TopicPartition], start: tuple[str, int], timeout: float) -> None:
    """Seek the assigned partitions to ``start`` (:func:`start_at`)."""
    kind, value = start
    if kind == "earliest":
        consumer.seek_to_beginning(tps)
    elif kind == "latest":
        consumer.seek_to_end(tps)
    elif kind == "timestamp":
        found = consumer.offsets_for_times(dict.fromkeys(tps, value), timeout=timeout)
        ends = consumer.end_offsets(tps, timeout=timeout)
        for tp in tps:
            hit = found.get(tp)
            consumer.seek(tp, hit.offset if hit is not None else ends[tp])
    else:
        for tp in tps:
            consumer.seek(tp, value)


def _start(consumer: KafkaConsumer[Any, Any], args: argparse.Namespace, start: tuple[str, int]) -> None:
    """Subscribe (--group) or assign and seek. A missing topic is created if the broker creates topics on use
    (the consumer's metadata request allows it unless -X allow.auto.create.topics=false, as in Java's console
    consumer); one that still does not exist, or an unknown --partition, fails here with exit code 4."""
    auto_create = bool(consumer.config["allow.auto.create.topics"])
    counts = {t: partition_count(consumer, t, args.timeout, auto_create) for t in args.topics}
    if args.group:
        consumer.subscribe(args.topics)
        return
    if args.partition is not None:
        check_partition(args.topics[0], args.partition, counts[args.topics[0]])
        tps = [TopicPartition(args.topics[0], args.partition)]
    else:
        tps = [TopicPartition(t, p) for t in args.topics for p in range(counts[t])]
    consumer.assign(tps)
    _position(consumer, tps, start, args.timeout)


def run(args: argparse.Namespace) -> int:
    try:
        fmt = RecordFormat(args.format if args.format is not None else ("%k\\t%s\\n" if args.print_key else "%s\\n"))
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None
    consume(args, fmt)
    return EXIT_OK


class Consumed(NamedTuple):
    """What :func:`consume` printed: ``records`` records; ``idle`` when it stopped after --idle-timeout."""

    records: int
    idle: bool


def consume(args: argparse.Namespace, fmt: RecordRenderer, idle_note: str | None = None) -> Consumed:
    """Check the flags, start reading (``args``: topics, group, partition, offset, from_beginning,
    isolation_level, max_messages, idle_timeout and the common flags) and print each record as ``fmt``
    renders it, until --max-messages, --idle-timeout or Ctrl-C. ``idle_note``: a line for stderr when
    --idle-timeout stopped it (before the ``Processed a total`` line)."""
    _check_flags(args)
    start = start_at(args)
    extra: dict[str, Any] = {
        "isolation.level": args.isolation_level,
        "default.api.timeout.ms": int(args.timeout * 1000),
        "enable.auto.commit": False,
    }
    if args.group:
        extra.update({"group.id": args.group, "auto.offset.reset": "earliest" if args.from_beginning else "latest"})
    consumer = KafkaConsumer(client_config("consumer", args, extra))
    try:
        _start(consumer, args, start)
    except BaseException:
        consumer.close()
        raise
    return _print_records(consumer, fmt, args, idle_note)


def _print_records(consumer: KafkaConsumer[Any, Any], fmt: RecordRenderer, args: argparse.Namespace,
                   idle_note: str | None) -> Consumed:
    """The read loop, until --max-messages, --idle-timeout or Ctrl-C; then the group's commit, the consumer's
    close and Kafka's ``Processed a total of N messages``."""
    stopping = False

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        consumer.wakeup()

    previous = signal.signal(signal.SIGINT, on_sigint)
    count = 0
    idle = False
    consumed: dict[TopicPartition, OffsetAndMetadata] = {}
    out = sys.stdout.buffer
    try:
        last_record = last_commit = time.monotonic()
        while not stopping and (args.max_messages is None or count < args.max_messages):
            try:
                records = consumer.poll(0.5)
            except WakeupException:
                break
            now = time.monotonic()
            for record in records:
                out.write(fmt.render(record))
                consumed[record.topic_partition()] = OffsetAndMetadata(record.offset + 1, "", record.leader_epoch)
                count += 1
                last_record = now
                if args.max_messages is not None and count >= args.max_messages:
                    break
            out.flush()
            if args.idle_timeout is not None and now - last_record >= args.idle_timeout:
                idle = True
                break
            if args.group and consumed and now - last_commit >= COMMIT_INTERVAL_S:
                consumer.commit_async(dict(consumed))
                last_commit = now
        if args.group and consumed:
            try:
                consumer.commit_sync(consumed, timeout=args.timeout)
            except WakeupException:  # Ctrl-C came while records were printed: its wakeup hit the commit
                consumer.commit_sync(consumed, timeout=args.timeout)
    finally:
        signal.signal(signal.SIGINT, previous)
        consumer.close()
        if idle and idle_note:
            info(idle_note)
        info(f"Processed a total of {count} messages")
    return Consumed(count, idle)

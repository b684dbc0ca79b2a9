"""``pykafka produce TOPIC`` (Kafka's kafka-console-producer.sh): one record per input line.

Plain mode sends each line (bytes, without its line ending) as the value, split into key and value at
the first ``--key-separator``. ``--json`` mode reads one JSON object per line with ``key``, ``value``,
``headers`` and ``partition`` (all optional). A line that cannot be sent is reported on stderr with its
line number; the exit code is 1 when any record failed."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from pykafka_client.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command,
    auto_created_partition_counts,
    check_partition,
    client_config,
    error_text,
    key_value,
    non_negative_int,
)
from pykafka_client.cli.output import info
from pykafka_client.producer.config import COMPRESSION_TYPES
from pykafka_client.producer.kafka_producer import KafkaProducer
from pykafka_client.producer.record_metadata import RecordMetadata

PROGRESS_INTERVAL_S = 5.0

EPILOG = """examples:
  printf 'user-1:hello\\nuser-2:world\\n' | pykafka produce greetings --key-separator : --header source=cli
  echo '{"key": "user-1", "value": "hi", "headers": {"trace": "42"}}' | pykafka produce greetings --json"""


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(subparsers, "produce", "send lines from stdin or a file as records", [common],
                    description=__doc__.split("\n\n", 1)[1] if __doc__ else None, epilog=EPILOG)
    p.add_argument("topic", metavar="TOPIC", help="the topic to write to (created on use if the broker allows it)")
    p.add_argument("--file", metavar="PATH", help="read lines from PATH instead of stdin")
    p.add_argument("--key-separator", metavar="SEP", help="split each line into KEY SEP VALUE at the first SEP")
    p.add_argument("--header", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="a header added to every record (repeatable)")
    p.add_argument("--partition", type=non_negative_int, metavar="N", help="send every record to this partition")
    p.add_argument("--compression", choices=COMPRESSION_TYPES, help="compression.type (default none)")
    p.add_argument("--acks", choices=("all", "-1", "0", "1"), help="acks (default all)")
    p.add_argument("--linger-ms", type=non_negative_int, metavar="MS", help="linger.ms (default 5)")
    p.add_argument("--json", action="store_true", help="one JSON object per line: key, value, headers, partition")
    p.set_defaults(run=run)


class Outcome:
    """Delivery results counted from the producer's I/O thread, and the number of lines read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = 0
        self.total = 0
        self.failures: list[tuple[int, str]] = []

    def fail(self, line: int, why: str) -> None:
        with self.lock:
            self.failures.append((line, why))

    def callback(self, line: int) -> Any:
        def on_delivery(metadata: RecordMetadata | None, exception: BaseException | None) -> None:
            if exception is not None:
                self.fail(line, error_text(exception))
            else:
                with self.lock:
                    self.sent += 1

        return on_delivery


def input_lines(stream: BinaryIO) -> Iterator[bytes]:
    for raw in stream:
        if raw.endswith(b"\n"):
            raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
        yield raw


def _as_bytes(value: Any, what: str) -> bytes | None:
    """JSON strings as UTF-8; null as no bytes; any other JSON value as its JSON text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def parse_json_line(line: bytes) -> dict[str, Any]:
    """The send() arguments of one ``--json`` line; ValueError says what is wrong."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object with key, value, headers, partition")
    unknown = set(obj) - {"key", "value", "headers", "partition"}
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))}: expected key, value, headers, partition")
    raw_headers = obj.get("headers") or {}
    pairs = list(raw_headers.items()) if isinstance(raw_headers, dict) else raw_headers
    if not isinstance(pairs, list) or not all(isinstance(h, (list, tuple)) and len(h) == 2 for h in pairs):
        raise ValueError("headers must be an object or a list of [key, value] pairs")
    partition = obj.get("partition")
    if partition is not None and (not isinstance(partition, int) or isinstance(partition, bool) or partition < 0):
        raise ValueError(f"partition must be a non-negative integer, got {json.dumps(partition)}")
    return {
        "key": _as_bytes(obj.get("key"), "key"),
        "value": _as_bytes(obj.get("value"), "value"),
        "headers": [(str(k), _as_bytes(v, "header")) for k, v in pairs],
        "partition": partition,
    }


def producer_config(args: argparse.Namespace) -> dict[str, Any]:
    """The producer's configuration: the common flags, then --compression, --acks and --linger-ms."""
    extra: dict[str, Any] = {"max.block.ms": int(args.timeout * 1000)}
    for flag, name in (("compression", "compression.type"), ("acks", "acks"), ("linger_ms", "linger.ms")):
        if getattr(args, flag, None) is not None:
            extra[name] = getattr(args, flag)
    return client_config("producer", args, extra)


def run(args: argparse.Namespace) -> int:
    separator = args.key_separator.encode("utf-8") if args.key_separator else None
    headers = [(k, v.encode("utf-8")) for k, v in args.header]

    def fields_of(line: bytes) -> dict[str, Any]:
        if args.json:
            fields = parse_json_line(line)
            fields["headers"] = headers + fields["headers"]
            if fields["partition"] is None:
                fields["partition"] = args.partition
            return fields
        key: bytes | None = None
        value = line
        if separator is not None:
            key, sep, value = line.partition(separator)
            if not sep:
                raise ValueError(f"no key separator {args.key_separator!r} in the line")
        return {"key": key, "value": value, "headers": headers, "partition": args.partition}

    config = producer_config(args)
    try:
        stream: BinaryIO = open(args.file, "rb") if args.file else sys.stdin.buffer
    except OSError as e:
        raise CliError(f"cannot read --file {args.file}: {e.strerror or e}", EXIT_USAGE) from e
    try:
        outcome = produce_lines(args, config, input_lines(stream), fields_of)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    for number, why in sorted(outcome.failures):
        print(f"pykafka produce: line {number}: {why}", file=sys.stderr)
    failed = len(outcome.failures)
    info(f"Produced {outcome.sent} of {outcome.total} records to {args.topic}" + (f"; {failed} failed" if failed else "."))
    return EXIT_FAILED if failed else EXIT_OK


def produce_lines(args: argparse.Namespace, config: dict[str, Any], lines: Iterable[bytes],
                  fields_of: Callable[[bytes], dict[str, Any]]) -> Outcome:
    """Send ``fields_of(line)`` (send()'s key, value, headers and partition) for each line to ``args.topic``
    (``args.partition``: every record's, checked first), until the lines end or Ctrl-C; a line ``fields_of``
    refuses with ValueError or TypeError, or one the broker refuses, is a failure with its line number.
    Before any line is read, a missing topic is created if the broker creates topics on use (as Kafka's
    console producer, whose first metadata request allows it); otherwise it, or an unknown partition, fails."""
    count = auto_created_partition_counts(args, [args.topic])[args.topic]
    check_partition(args.topic, args.partition, count)
    outcome = Outcome()
    progress = sys.stdout.isatty()  # a person is watching: a line on stderr every PROGRESS_INTERVAL_S
    last_progress = time.monotonic()
    producer = KafkaProducer(config)
    try:
        for number, line in enumerate(lines, start=1):
            outcome.total += 1
            if progress and time.monotonic() - last_progress >= PROGRESS_INTERVAL_S:
                last_progress = time.monotonic()
                info(f"{outcome.total - 1} lines read, {outcome.sent} records sent, {len(outcome.failures)} failed")
            try:
                producer.send(args.topic, on_delivery=outcome.callback(number), **fields_of(line))
            except (ValueError, TypeError) as e:
                outcome.fail(number, str(e))
            except Exception as e:
                outcome.fail(number, error_text(e))
    except KeyboardInterrupt:
        info("interrupted: sending what was read")
    finally:
        producer.close(args.timeout)
    return outcome

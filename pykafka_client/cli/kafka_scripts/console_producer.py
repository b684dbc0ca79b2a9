"""``kafka-console-producer.sh``: each line of stdin as a record, read as Kafka's console producer reads it
(``--property parse.key=true``, ``key.separator``, ``parse.headers=true``, ``headers.delimiter``,
``headers.separator``, ``headers.key.separator``, ``null.marker``, ``ignore.error``), sent by the ``pykafka
produce`` function; prints nothing but Kafka's ``>`` prompt when a person types at a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

from pykafka_client.cli.kafka_scripts.base import (
    ToolParser,
    cli_args,
    failure_text,
    file_properties,
    properties,
    property_flag,
    run_tool,
)
from pykafka_client.cli.produce import input_lines, produce_lines, producer_config

COMPRESSION_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def build_parser() -> ToolParser:
    p = ToolParser("kafka-console-producer.sh", "Read data from standard input and publish it to Kafka.")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the brokers to connect to (required)")
    p.add_argument("--broker-list", metavar="HOST:PORT", help="deprecated: --bootstrap-server")
    p.add_argument("--topic", metavar="TOPIC", help="The topic to produce messages to (required)")
    property_flag(p, "--property", "A property of the line reader: parse.key, key.separator, parse.headers, "
                                   "headers.delimiter, headers.separator, headers.key.separator, null.marker, "
                                   "ignore.error (repeatable)")
    property_flag(p, "--producer-property", "A producer config (repeatable)")
    p.add_argument("--producer.config", dest="producer_config", metavar="FILE", help="A properties file of producer "
                                                                                      "configs")
    p.add_argument("--command-config", metavar="FILE", help="A properties file of producer configs")
    p.add_argument("--compression-codec", nargs="?", const="gzip", choices=COMPRESSION_CODECS, metavar="CODEC",
                   help="none, gzip (when given without a value), snappy, lz4 or zstd")
    p.add_argument("--request-required-acks", metavar="ACKS", help="acks (default -1)")
    p.add_argument("--timeout", type=int, metavar="MS", help="linger.ms: how long a batch waits for more lines "
                                                             "(default 1000)")
    p.add_argument("--batch-size", type=int, metavar="BYTES", help="batch.size")
    p.add_argument("--sync", action="store_true", help="Send each message before reading the next one")
    p.add_argument("--max-block-ms", type=int, metavar="MS", help="max.block.ms")
    p.add_argument("--request-timeout-ms", type=int, metavar="MS", help="request.timeout.ms")
    p.add_argument("--message-send-max-retries", type=int, metavar="N", help="retries")
    return p


class LineReader:
    """Kafka's console producer's line format: ``[headers<headers.delimiter>][key<key.separator>]value``."""

    def __init__(self, props: dict[str, str]) -> None:
        self.parse_key = props.get("parse.key", "false").lower() == "true"
        self.key_separator = props.get("key.separator", "\t").encode("utf-8")
        self.parse_headers = props.get("parse.headers", "false").lower() == "true"
        self.headers_delimiter = props.get("headers.delimiter", "\t").encode("utf-8")
        self.headers_separator = props.get("headers.separator", ",").encode("utf-8")
        self.headers_key_separator = props.get("headers.key.separator", ":").encode("utf-8")
        self.ignore_error = props.get("ignore.error", "false").lower() == "true"
        marker = props.get("null.marker")
        self.null_marker = marker.encode("utf-8") if marker is not None else None
        self.line_number = 0

    def _null(self, b: bytes) -> bytes | None:
        return None if self.null_marker is not None and b == self.null_marker else b

    def fields(self, line: bytes) -> dict[str, Any]:
        self.line_number += 1
        rest = line
        headers: list[tuple[str, bytes | None]] = []
        if self.parse_headers:
            head, sep, rest = line.partition(self.headers_delimiter)
            if not sep:
                if not self.ignore_error:
                    raise ValueError(f"No headers delimiter found on line number {self.line_number}: "
                                     f"'{line.decode('utf-8', 'replace')}'")
                head, rest = b"", line
            for item in filter(None, head.split(self.headers_separator)):
                k, _, v = item.partition(self.headers_key_separator)
                headers.append((k.decode("utf-8"), self._null(v)))
        key: bytes | None = None
        value: bytes | None = rest
        if self.parse_key:
            k, sep, v = rest.partition(self.key_separator)
            if sep:
                key, value = self._null(k), self._null(v)
            elif not self.ignore_error:
                raise ValueError(f"No key separator found on line number {self.line_number}: "
                                 f"'{line.decode('utf-8', 'replace')}'")
            else:
                value = self._null(rest)
        else:
            value = self._null(rest)
        return {"key": key, "value": value, "headers": headers, "partition": None}


def _prompted(lines: Iterator[bytes]) -> Iterator[bytes]:
    """Kafka's ``>`` before each line a person types (stdin and stdout both a terminal)."""
    while True:
        print(">", end="", flush=True)
        try:
            line = next(lines)
        except StopIteration:
            return
        yield line


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    if opts.bootstrap_server is None and opts.broker_list is not None:
        opts.bootstrap_server = opts.broker_list
    parser.required(opts, "bootstrap_server", "topic")
    reader = LineReader(properties(parser, "--property", opts.property))
    settings = file_properties(opts.producer_config)
    settings.update(properties(parser, "--producer-property", opts.producer_property))
    flags = {"compression.type": opts.compression_codec, "acks": opts.request_required_acks, "batch.size": opts.batch_size,
             "max.block.ms": opts.max_block_ms, "request.timeout.ms": opts.request_timeout_ms,
             "retries": opts.message_send_max_retries}
    settings.update({k: str(v) for k, v in flags.items() if v is not None})
    settings.setdefault("linger.ms", str(1000 if opts.timeout is None else opts.timeout))
    if opts.sync:
        settings["linger.ms"] = "0"
    args = cli_args(opts.bootstrap_server, opts.command_config, settings, topic=opts.topic, partition=None)

    def on_error(e: BaseException) -> None:
        print(f"ERROR {failure_text(e, args)} (kafka-console-producer.sh)", file=sys.stderr)

    def body() -> int:
        lines = input_lines(sys.stdin.buffer)
        if sys.stdin.isatty() and sys.stdout.isatty():
            lines = _prompted(lines)
        outcome = produce_lines(args, producer_config(args), lines, reader.fields)
        for number, why in sorted(outcome.failures):
            print(f"ERROR line {number}: {why} (kafka-console-producer.sh)", file=sys.stderr)
        return 1 if outcome.failures else 0

    return run_tool(body, on_error)

"""``kafka-producer-perf-test.sh``: ``--num-records`` records of ``--record-size`` bytes at most
``--throughput`` per second, Kafka's progress and summary lines; on the ``pykafka perf produce`` function."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pykafka_client.cli.kafka_scripts.base import ToolParser, cli_args, failure_text, file_properties, run_tool
from pykafka_client.cli.perf import run_produce


def build_parser() -> ToolParser:
    p = ToolParser("kafka-producer-perf-test.sh", "This tool is used to verify the producer performance.")
    p.add_argument("--topic", required=True, help="produce messages to this topic")
    p.add_argument("--num-records", required=True, type=int, metavar="NUM-RECORDS",
                   help="number of messages to produce")
    p.add_argument("--record-size", type=int, metavar="RECORD-SIZE", help="message size in bytes")
    p.add_argument("--payload-file", metavar="PAYLOAD-FILE", help="not supported here: use --record-size")
    p.add_argument("--throughput", required=True, type=float, metavar="THROUGHPUT",
                   help="throttle maximum message throughput to approximately THROUGHPUT messages/sec; -1 for none")
    p.add_argument("--producer-props", nargs="+", default=[], metavar="PROP-NAME=PROP-VALUE",
                   help="producer configs, e.g. bootstrap.servers=localhost:9092 acks=1")
    p.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                   help="producer config properties file")
    p.add_argument("--command-config", metavar="CONFIG-FILE", help="producer config properties file")
    p.add_argument("--bootstrap-server", metavar="BOOTSTRAP-SERVER", help="the brokers to connect to")
    p.add_argument("--print-metrics", action="store_true", help="accepted (no metrics are printed)")
    p.add_argument("--transactional-id", metavar="TRANSACTIONAL-ID", help="not supported here")
    p.add_argument("--reporting-interval", type=int, default=5000, metavar="INTERVAL-MS",
                   help="interval between progress lines, in milliseconds (default 5000)")
    return p


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    if (opts.record_size is None) == (opts.payload_file is None):
        parser.error("Either --record-size or --payload-file must be specified but not both.")
    if opts.payload_file is not None or opts.transactional_id is not None:
        parser.error("--payload-file and --transactional-id are not supported by this kafka-producer-perf-test.sh")
    settings = file_properties(opts.producer_config)
    for item in opts.producer_props:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"Invalid property: {item}")
        settings[key.strip()] = value
    bootstrap = opts.bootstrap_server or settings.get("bootstrap.servers") or file_properties(opts.command_config).get(
        "bootstrap.servers")
    if not bootstrap:
        parser.error("Either --bootstrap-server or bootstrap.servers in --producer-props or --producer.config must "
                     "be specified.")
    args = cli_args(bootstrap, opts.command_config, settings, topic=opts.topic, num_records=opts.num_records,
                    record_size=opts.record_size, throughput=opts.throughput,
                    reporting_interval=max(opts.reporting_interval, 1) / 1000.0)

    def on_error(e: BaseException) -> None:
        print(f"ERROR {failure_text(e, args)} (kafka-producer-perf-test.sh)", file=sys.stderr)

    return run_tool(lambda: run_produce(args), on_error)

"""``python -m mini_broker`` / ``mini-broker``: run a broker until SIGTERM or SIGINT.

    mini-broker [--config server.properties] [--listeners PLAINTEXT://127.0.0.1:9092] [--data-dir DIR]
                [--metrics-port PORT] [--override key=value ...] [--log-level INFO]
    mini-broker --cluster N [--data-dir DIR] [--listeners PLAINTEXT://127.0.0.1:9092] [--override ...]
    mini-broker --generate-test-certificate DIR

``--generate-test-certificate DIR`` writes a throwaway CA (``DIR/ca.pem``) and a broker key and certificate for
localhost/127.0.0.1 (``DIR/broker.pem``, for ``ssl.keystore.location``), prints the two paths and exits; see
:mod:`mini_broker.security.dev_certificates`.

``--cluster N`` runs a controller in this process and N brokers, each its own process with its own port
(the listener's port, then the next ones) and ``DIR/broker-<id>``; see :mod:`mini_broker.cluster.mini_cluster`.
Further listeners after the first PLAINTEXT one (``--listeners PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9192``)
are every broker's, numbered the same way, with their ``--override`` settings (``inter.broker.listener.name``,
``listener.name.<l>.*``) applying to every broker.

Prints ``mini_broker listening on PLAINTEXT://HOST:PORT`` (one line per listener, with the bound port when
the configured one is 0) once it accepts connections. On SIGTERM/SIGINT it shuts down cleanly (logs flushed,
clean-shutdown markers written) and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType

from mini_broker.broker import MiniBroker, default_cli_data_dir
from mini_broker.config import load_properties, parse_listener
from pykafka_client.errors import ConfigurationError


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="mini-broker", description="A Kafka-compatible single-node broker.")
    p.add_argument("--config", help="a server.properties file (Kafka property names)")
    p.add_argument("--listeners", help="e.g. PLAINTEXT://127.0.0.1:9092 (port 0 = any free port)")
    p.add_argument("--data-dir", help=f"where logs and metadata live (default {default_cli_data_dir()})")
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on 127.0.0.1:PORT/metrics")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="override a property (repeatable), as Kafka's --override")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    p.add_argument("--cluster", type=int, metavar="N", help="run a controller and N brokers (one process each)")
    p.add_argument("--exit-on-stdin-eof", action="store_true",
                   help="shut down cleanly when stdin closes (a parent process owning this broker died)")
    p.add_argument("--generate-test-certificate", metavar="DIR",
                   help="write a test CA (DIR/ca.pem) and a broker certificate for localhost (DIR/broker.pem), then exit")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s")
    if args.generate_test_certificate:
        return _generate_test_certificate(args.generate_test_certificate)
    props: dict[str, object] = {}
    try:
        if args.config:
            with open(args.config, encoding="utf-8") as fh:
                props.update(load_properties(fh.read()))
        for item in args.override:
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigurationError(f"--override expects key=value, got {item!r}")
            props[key.strip()] = value
        if args.listeners:
            props["listeners"] = args.listeners
        props.setdefault("listeners", "PLAINTEXT://127.0.0.1:9092")
        data_dir = args.data_dir
        if data_dir is None and "log.dirs" not in props and "log.dir" not in props:
            data_dir = default_cli_data_dir()
        broker = MiniBroker(props, data_dir=data_dir, metrics_port=args.metrics_port)
    except (ConfigurationError, OSError, ValueError) as e:
        print(f"mini_broker: configuration error: {e}", file=sys.stderr)
        return 2

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.exit_on_stdin_eof:
        threading.Thread(target=_stop_on_stdin_eof, args=(stop,), name="stdin-watch", daemon=True).start()
    if args.cluster:
        return _run_cluster(args, props, data_dir, stop)
    try:
        broker.start()
    except OSError as e:
        print(f"mini_broker: failed to start: {e}", file=sys.stderr)
        return 1
    for url in broker.listener_urls():
        print(f"mini_broker listening on {url}", flush=True)
    if broker.metrics_url:
        print(f"mini_broker metrics on {broker.metrics_url}", flush=True)
    while not stop.wait(0.5):
        pass
    broker.shutdown()
    return 0


def _generate_test_certificate(directory: str) -> int:
    from mini_broker.security.dev_certificates import generate_test_certificates

    try:
        written = generate_test_certificates(directory)
    except (RuntimeError, OSError) as e:
        print(f"mini_broker: {e}", file=sys.stderr)
        return 1
    print(f"mini_broker test CA certificate (clients trust it): {written.ca}", flush=True)
    print(f"mini_broker test keystore (ssl.keystore.location): {written.keystore}", flush=True)
    return 0


def _stop_on_stdin_eof(stop: threading.Event) -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except (OSError, ValueError):
        pass
    stop.set()


def _run_cluster(args: argparse.Namespace, props: dict[str, object], data_dir: str | None,
                 stop: threading.Event) -> int:
    from mini_broker.cluster.mini_cluster import MiniCluster

    listeners = props.pop("listeners", "PLAINTEXT://127.0.0.1:9092")
    specs = [str(s).strip() for s in (listeners if isinstance(listeners, list) else str(listeners).split(","))
             if str(s).strip()]
    try:
        endpoints = [parse_listener("listeners", spec) for spec in specs]
    except ConfigurationError as e:
        print(f"mini_broker: {e}", file=sys.stderr)
        return 1
    # the first listener is the brokers' PLAINTEXT one; each further listener (SSL, SASL_SSL, ...) is every
    # broker's too; a fixed port is the first broker's, the next brokers take the next ports
    base_port = endpoints[0].port
    ports = [base_port + i if base_port else 0 for i in range(args.cluster)]
    extras = [",".join(ep.connection_string(ep.port + i if ep.port else 0) for ep in endpoints[1:])
              for i in range(args.cluster)]
    cluster = MiniCluster(args.cluster, data_dir=data_dir, overrides={k: str(v) for k, v in props.items()},
                          log_level=str(args.log_level).upper(),
                          ports=None if base_port == 0 else ports, extra_listeners=extras)
    try:
        cluster.start()
    except (OSError, RuntimeError) as e:
        print(f"mini_broker: cluster failed to start: {e}", file=sys.stderr)
        return 1
    assert cluster.controller is not None
    print(f"mini_broker controller on {cluster.controller.address}", flush=True)
    for b in cluster.brokers.values():
        print(f"mini_broker broker {b.broker_id} listening on PLAINTEXT://{b.bootstrap}", flush=True)
        for ep in endpoints[1:]:
            print(f"mini_broker broker {b.broker_id} listening on {ep.listener_name}://"
                  f"{cluster.listener_bootstrap(b.broker_id, ep.listener_name)}", flush=True)
    print(f"mini_broker cluster bootstrap servers {cluster.bootstrap_servers}", flush=True)
    while not stop.wait(0.5):
        pass
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

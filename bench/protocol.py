"""Protocol codec micro benchmark (not a test): generated message encode/decode throughput.

    .venv/bin/python bench/protocol.py [--seconds 1.0]

* ProduceRequest v9 encode (+ frame): 1 topic x 8 partitions of 16 KiB record batches (records are not
  copied: each batch is its own frame piece);
* FetchResponse v12 decode: 1 topic x 50 partitions of 16 KiB (records decode to memoryviews);
* MetadataResponse v12 decode: 100 topics x 10 partitions;
* OffsetCommitRequest v8 encode and small ApiVersionsResponse decode.

Each case runs for about ``--seconds`` and prints operations per second and microseconds per operation.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pykafka_client.protocol import encode_request
from pykafka_client.protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    MetadataResponse,
    OffsetCommitRequest,
    ProduceRequest,
)


def run(name: str, fn: Callable[[], object], seconds: float) -> None:
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(50):
            fn()
        n += 50
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    print(f"{name:<48} {n / elapsed:>12,.0f} ops/s {elapsed / n * 1e6:>10.1f} us/op")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    batch = b"\x00" * 16384

    produce = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name="bench", partition_data=[ProduceRequest.PartitionProduceData(index=i, records=batch) for i in range(8)])])
    fetch = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="bench", partitions=[
        FetchResponse.PartitionData(partition_index=i, high_watermark=1000, records=batch) for i in range(50)])])
    fetch_bytes = fetch.encode(12)
    meta = MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(i, f"host{i}", 9092) for i in range(3)],
                            topics=[MetadataResponse.MetadataResponseTopic(name=f"topic-{t}", partitions=[
                                MetadataResponse.MetadataResponsePartition(partition_index=p, leader_id=p % 3,
                                                                           replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2])
                                for p in range(10)]) for t in range(100)])
    meta_bytes = meta.encode(12)
    commit = OffsetCommitRequest(group_id="g", topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
        name="t", partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=i, committed_offset=i)
                              for i in range(10)])])
    av = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(k, 0, 10) for k in range(70)]).encode(3)

    run("ProduceRequest v9 encode_request (8 x 16 KiB)", lambda: encode_request(produce, 9, 1, "bench"), args.seconds)
    run("FetchResponse v12 decode (50 x 16 KiB)", lambda: FetchResponse.decode(fetch_bytes, 12), args.seconds)
    run("MetadataResponse v12 decode (100 x 10)", lambda: MetadataResponse.decode(meta_bytes, 12), args.seconds)
    run("MetadataResponse v12 encode (100 x 10)", lambda: meta.encode(12), args.seconds)
    run("OffsetCommitRequest v8 encode (10 partitions)", lambda: commit.encode(8), args.seconds)
    run("ApiVersionsResponse v3 decode (70 keys)", lambda: ApiVersionsResponse.decode(av, 3), args.seconds)


if __name__ == "__main__":
    main()

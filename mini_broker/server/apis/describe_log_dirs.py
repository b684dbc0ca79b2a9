"""DescribeLogDirs (key 35, KIP-113; total/usable bytes KIP-827): per log directory of this broker, the partitions
asked (all when ``topics`` is null) that live there, with their size in bytes (the sum of their segments), an offset
lag of 0 (the broker keeps no future logs, so the lag of a current log, HW - LEO floored at 0, is always 0) and
``is_future_key`` false; at v4+ the volume's total and usable bytes. The broker has no offline log directories
(a failing directory stops it), so every directory answers error 0 and KAFKA_STORAGE_ERROR is never sent. DESCRIBE on
the cluster is needed (else CLUSTER_AUTHORIZATION_FAILED and no directories)."""

from __future__ import annotations

import os

from mini_broker.network.request_channel import Request
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import ClusterAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse

Result = DescribeLogDirsResponse.DescribeLogDirsResult


def _volume_bytes(log_dir: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume ``log_dir`` is on; (-1, -1) when unknown."""
    try:
        st = os.statvfs(log_dir)
    except (OSError, AttributeError):  # AttributeError: no statvfs on this platform
        return -1, -1
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def handle(apis: KafkaApis, request: Request) -> DescribeLogDirsResponse:
    body = request.body
    assert isinstance(body, DescribeLogDirsRequest)
    if not apis.broker.auth(request).cluster(AclOperation.DESCRIBE):
        return DescribeLogDirsResponse(throttle_time_ms=0, error_code=ClusterAuthorizationFailedError.code, results=[])
    wanted: dict[str, set[int]] | None = (
        None if body.topics is None else {t.topic: set(t.partitions) for t in body.topics})
    results: list[Result] = []
    for log_dir, logs in apis.broker.replica_manager.log_manager.logs_by_dir().items():
        by_topic: dict[str, list[DescribeLogDirsResponse.DescribeLogDirsPartition]] = {}
        for lg in sorted(logs, key=lambda lg: (lg.topic, lg.partition)):
            if wanted is not None and lg.partition not in wanted.get(lg.topic, ()):
                continue
            by_topic.setdefault(lg.topic, []).append(DescribeLogDirsResponse.DescribeLogDirsPartition(
                partition_index=lg.partition, partition_size=lg.size(), offset_lag=0, is_future_key=False))
        total, usable = _volume_bytes(log_dir)
        results.append(Result(
            error_code=0, log_dir=log_dir,
            topics=[DescribeLogDirsResponse.DescribeLogDirsTopic(name=n, partitions=ps) for n, ps in by_topic.items()],
            total_bytes=total, usable_bytes=usable))
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results)


API = ApiSpec(ApiKey.DESCRIBE_LOG_DIRS, 0, 4, handle)

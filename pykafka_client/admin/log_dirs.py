"""The AdminClient's log directory call (Java ``KafkaAdminClient.describeLogDirs``): DescribeLogDirs for all
topics, sent to each broker asked (every broker in the metadata when none are named)."""

from __future__ import annotations

from collections.abc import Iterable

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.types import LogDirDescription, ReplicaInfo
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from pykafka_client.structs import TopicPartition
from pykafka_client.utils.arguments import list_argument


def _bytes(value: int) -> int | None:
    return None if value < 0 else value  # -1: the broker did not say (pre-v4, or no volume stats)


def describe_log_dirs(
    ctx: AdminContext, broker_ids: Iterable[int] | None = None, timeout: float | None = None,
) -> dict[int, dict[str, LogDirDescription]]:
    with ctx.lock:
        timer = ctx.timer(timeout)
        if broker_ids is None:
            ctx.refresh_metadata(timer, "describe_log_dirs")
            ids = sorted(n.id for n in ctx.metadata.fetch().nodes)
        else:
            ids = list_argument("describe_log_dirs", "broker_ids", broker_ids, int, "a list of broker ids (int)")
        out: dict[int, dict[str, LogDirDescription]] = {}
        for broker_id in ids:
            # topics=None asks for every partition on the broker (Java sends the same)
            _, resp = ctx.send(ApiKey.DESCRIBE_LOG_DIRS, lambda v: DescribeLogDirsRequest(topics=None),
                                  ctx.broker_target(broker_id), timer)
            assert isinstance(resp, DescribeLogDirsResponse)
            if resp.error_code:
                raise broker_error(resp.error_code, None, f"describe_log_dirs on broker {broker_id}")
            out[broker_id] = {
                r.log_dir: LogDirDescription(
                    error=broker_error(r.error_code, None, f"log dir {r.log_dir} on broker {broker_id}")
                    if r.error_code else None,
                    replica_infos={TopicPartition(t.name, p.partition_index): ReplicaInfo(p.partition_size, p.offset_lag,
                                                                                           p.is_future_key)
                                   for t in r.topics for p in t.partitions},
                    total_bytes=_bytes(r.total_bytes), usable_bytes=_bytes(r.usable_bytes))
                for r in resp.results
            }
        return out

"""DescribeLogDirs (Java ``KafkaAdminClient.describeLogDirs``) for all topics, to each broker asked (every
broker in the metadata when none are named)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import EachBroker
from pykafka_client.admin.types import LogDirDescription, ReplicaInfo
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.arguments import list_argument


def _bytes(value: int) -> int | None:
    return None if value < 0 else value  # -1: the broker did not say (pre-v4, or no volume stats)


@dataclass
class DescribeLogDirsHandler:
    """Keys: broker ids; a broker-level error stops the call."""

    api_key = ApiKey.DESCRIBE_LOG_DIRS
    lookup = EachBroker()

    def build_request(self, version: int, keys: list[int]) -> DescribeLogDirsRequest:
        return DescribeLogDirsRequest(topics=None)  # None asks for every partition on the broker (as Java)

    def handle_response(self, node: Node, keys: list[int], response: DescribeLogDirsResponse
                        ) -> ApiResult[int, dict[str, LogDirDescription]]:
        assert isinstance(response, DescribeLogDirsResponse)
        (broker_id,) = keys
        if response.error_code:
            raise broker_error(response.error_code, None, f"describe_log_dirs on broker {broker_id}")
        dirs = {
            r.log_dir: LogDirDescription(
                error=broker_error(r.error_code, None, f"log dir {r.log_dir} on broker {broker_id}")
                if r.error_code else None,
                replica_infos={TopicPartition(t.name, p.partition_index): ReplicaInfo(p.partition_size, p.offset_lag,
                                                                                       p.is_future_key)
                               for t in r.topics for p in t.partitions},
                total_bytes=_bytes(r.total_bytes), usable_bytes=_bytes(r.usable_bytes))
            for r in response.results
        }
        return ApiResult(completed={broker_id: dirs})

    @staticmethod
    def call(ctx: AdminContext, broker_ids: Iterable[int] | None = None,
             timeout: float | None = None) -> dict[int, dict[str, LogDirDescription]]:
        """Per broker (all when None), per log directory: its error, replicas and volume sizes."""
        with ctx.lock:
            timer = ctx.timer(timeout)
            if broker_ids is None:
                ctx.refresh_metadata(timer, "describe_log_dirs")
                ids = sorted(n.id for n in ctx.metadata.fetch().nodes)
            else:
                ids = list_argument("describe_log_dirs", "broker_ids", broker_ids, int, "a list of broker ids (int)")
            return ctx.run(DescribeLogDirsHandler(), ids, timer).completed

"""CreateTopics (Java ``KafkaAdminClient.createTopics``): to the controller (any broker while none is known),
resent after a metadata refresh while the broker answers NOT_CONTROLLER."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import Controller
from pykafka_client.admin.types import CreateTopicResult, NewTopic
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import CreateTopicsRequest, CreateTopicsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument
from pykafka_client.utils.time import Timer

NOT_CONTROLLER = 41
ZERO_UUID = uuid.UUID(int=0)


@dataclass
class CreateTopicsHandler:
    """Keys: the topic names; ``topics`` the NewTopics asked for."""

    topics: list[NewTopic]
    validate_only: bool
    timer: Timer
    api_key = ApiKey.CREATE_TOPICS
    lookup = Controller()

    def build_request(self, version: int, keys: list[str]) -> CreateTopicsRequest:
        wanted = set(keys)
        return CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    assignments=[
                        CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
                        for p, b in (t.replica_assignments or {}).items()
                    ],
                    configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()],
                )
                for t in self.topics if t.name in wanted
            ],
            timeout_ms=max(0, min(self.timer.remaining_ms(), 2**31 - 1)),
            validate_only=self.validate_only if version >= 1 else False,
        )

    def handle_response(self, node: Node, keys: list[str], response: CreateTopicsResponse) -> ApiResult[str, CreateTopicResult]:
        assert isinstance(response, CreateTopicsResponse)
        result: ApiResult[str, CreateTopicResult] = ApiResult()
        for r in response.topics:
            if r.error_code:
                error = broker_error(r.error_code, r.error_message, f"topic {r.name!r}")
                if r.error_code == NOT_CONTROLLER:
                    result.unmapped[r.name] = error
                else:
                    result.fail(r.name, error)
                continue
            tid = r.topic_id if r.topic_id != ZERO_UUID else None
            result.completed[r.name] = CreateTopicResult(r.name, tid, r.num_partitions, r.replication_factor)
        return result

    @staticmethod
    def call(ctx: AdminContext, new_topics: Iterable[NewTopic], timeout: float | None = None,
             validate_only: bool = False) -> dict[str, CreateTopicResult]:
        """Create topics; returns one result per topic; raises the first topic's error after all were tried."""
        topics = list_argument(
            "create_topics", "new_topics", new_topics, NewTopic,
            "a list of NewTopic, e.g. [NewTopic('orders', num_partitions=3, replication_factor=1)]",
        )
        if not topics:
            return {}
        names = list(dict.fromkeys(t.name for t in topics))
        return ctx.run_call(lambda timer: CreateTopicsHandler(topics, validate_only, timer), names, timeout,
                            update_metadata=True)

"""DescribeTransactions (Java ``KafkaAdminClient.describeTransactions``): each transactional id's coordinator
is found with FindCoordinator (key type TRANSACTION, batched), and each coordinator asked once about its ids."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import COORDINATOR_MOVED, ApiResult
from pykafka_client.admin.lookups import TRANSACTION_COORDINATORS
from pykafka_client.admin.types import TransactionDescription, TransactionState
from pykafka_client.errors import for_code
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeTransactionsRequest, DescribeTransactionsResponse
from pykafka_client.structs import Node, TopicPartition
from pykafka_client.utils.arguments import list_argument


@dataclass
class DescribeTransactionsHandler:
    """Keys: transactional ids, one request per coordinator. A coordinator that moved sends only its ids back to
    the lookup; a loading one (or another retriable error) is asked again; any other error fails only its id."""

    api_key = ApiKey.DESCRIBE_TRANSACTIONS
    lookup = TRANSACTION_COORDINATORS

    def build_request(self, version: int, keys: list[str]) -> DescribeTransactionsRequest:
        return DescribeTransactionsRequest(transactional_ids=keys)

    def handle_response(self, node: Node, keys: list[str], response: DescribeTransactionsResponse
                        ) -> ApiResult[str, TransactionDescription]:
        assert isinstance(response, DescribeTransactionsResponse)
        result: ApiResult[str, TransactionDescription] = ApiResult()
        for s in response.transaction_states:
            tid = s.transactional_id
            if s.error_code:
                error = broker_error(s.error_code, None, f"transactional id {tid!r}")
                if for_code(s.error_code).retriable and s.error_code not in COORDINATOR_MOVED:
                    result.retry[tid] = error  # loading, or another passing state: ask the same coordinator again
                else:
                    result.coordinator_error(tid, s.error_code, error)
                continue
            result.completed[tid] = TransactionDescription(
                node.id, TransactionState.parse(s.transaction_state), s.producer_id, s.producer_epoch,
                s.transaction_timeout_ms, s.transaction_start_time_ms if s.transaction_start_time_ms >= 0 else None,
                frozenset(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions))
        result.look_up_unanswered(keys)
        return result

    @staticmethod
    def call(ctx: AdminContext, transactional_ids: Iterable[str],
             timeout: float | None = None) -> dict[str, TransactionDescription]:
        """Each transactional id's transaction; raises the first id's error after all were asked."""
        ids = list_argument("describe_transactions", "transactional_ids", transactional_ids, str,
                            "a list of transactional ids (str)")
        return ctx.run_call(lambda _timer: DescribeTransactionsHandler(), list(dict.fromkeys(ids)), timeout)

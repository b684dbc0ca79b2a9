"""ListTransactions (Java ``KafkaAdminClient.listTransactions``): to every broker of the cluster, merged."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykafka_client.admin.admin_calls import broker_error
from pykafka_client.admin.admin_context import AdminContext
from pykafka_client.admin.api_handler import ApiResult
from pykafka_client.admin.lookups import ALL_BROKERS, AllBrokers
from pykafka_client.admin.types import TransactionListing, TransactionState
from pykafka_client.errors import UnsupportedVersionError
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListTransactionsRequest, ListTransactionsResponse
from pykafka_client.structs import Node
from pykafka_client.utils.arguments import list_argument

#: the first ListTransactions version with the duration filter (KIP-994)
DURATION_FILTER_VERSION = 1


@dataclass
class ListTransactionsHandler:
    """Keys: broker ids (:data:`ALL_BROKERS`: every broker), one request each; a loading broker is asked again,
    another broker-level error fails its broker."""

    states: list[TransactionState]
    producer_ids: list[int]
    duration_ms: int
    api_key = ApiKey.LIST_TRANSACTIONS
    lookup = AllBrokers("brokers to list transactions of")

    def build_request(self, version: int, keys: list[int | None]) -> ListTransactionsRequest:
        if version < DURATION_FILTER_VERSION and self.duration_ms >= 0:
            raise UnsupportedVersionError(f"list_transactions(duration_ms=...) needs ListTransactions "
                                          f"v{DURATION_FILTER_VERSION} or later; the broker supports only v{version}")
        return ListTransactionsRequest(state_filters=[s.value for s in self.states],
                                       producer_id_filters=self.producer_ids, duration_filter=self.duration_ms)

    def handle_response(self, node: Node, keys: list[int | None], response: ListTransactionsResponse
                        ) -> ApiResult[int | None, list[TransactionListing]]:
        assert isinstance(response, ListTransactionsResponse)
        result: ApiResult[int | None, list[TransactionListing]] = ApiResult()
        if response.error_code:
            error = broker_error(response.error_code, None, f"listing the transactions of broker {node.id}")
            result.coordinator_error(node.id, response.error_code, error)
            return result
        result.completed[node.id] = [
            TransactionListing(t.transactional_id, t.producer_id, TransactionState.parse(t.transaction_state))
            for t in response.transaction_states]
        return result

    @staticmethod
    def call(ctx: AdminContext, states: Iterable[TransactionState] = (), producer_ids: Iterable[int] = (),
             duration_ms: int = -1, timeout: float | None = None) -> list[TransactionListing]:
        """The transactional ids of every broker that match the filters, sorted by id."""
        wanted = list_argument("list_transactions", "states", states, TransactionState,
                               "a list of TransactionState, e.g. [TransactionState.ONGOING]")
        pids = list_argument("list_transactions", "producer_ids", producer_ids, int, "a list of producer ids (int)")
        completed = ctx.run_call(lambda _timer: ListTransactionsHandler(wanted, pids, duration_ms), [ALL_BROKERS],
                                 timeout)
        return sorted((t for listings in completed.values() for t in listings), key=lambda t: t.transactional_id)

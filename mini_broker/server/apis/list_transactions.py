"""ListTransactions (key 66): every transactional id of the coordinator, filtered by state names,
producer ids and (v1) a minimum running time; unknown state names are echoed back. Only the ids the principal may
DESCRIBE are listed (Kafka's rule)."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.txn_api_util import transaction_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import ListTransactionsRequest, ListTransactionsResponse


def handle(apis: KafkaApis, request: Request) -> ListTransactionsResponse:
    body = request.body
    assert isinstance(body, ListTransactionsRequest)
    duration = body.duration_filter if request.context.api_version >= 1 else -1
    error, unknown, found = transaction_coordinator(apis).handle_list(list(body.state_filters),
                                                                      list(body.producer_id_filters), duration)
    auth = apis.broker.auth(request)
    found = [d for d in found if auth.transactional_id(AclOperation.DESCRIBE, d.transactional_id)]
    return ListTransactionsResponse(
        throttle_time_ms=0, error_code=error, unknown_state_filters=unknown,
        transaction_states=[ListTransactionsResponse.TransactionState(
            transactional_id=d.transactional_id, producer_id=d.producer_id, transaction_state=d.state)
            for d in found])


API = ApiSpec(ApiKey.LIST_TRANSACTIONS, 0, 1, handle)

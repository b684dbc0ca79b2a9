"""EndTxn (key 26): commit or abort the producer's transaction. Answered once the PrepareCommit/PrepareAbort
record is durable; the markers are written afterwards (the transaction then becomes Complete*).

v5 (transactions V2, KIP-890 part 2: an epoch bump at every EndTxn) is not served: 0-4 are advertised.
WRITE on the transactional id is needed (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.txn_api_util import fenced_for_version, transaction_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.transaction.transaction_requests import EndTxnParams
from pykafka_client.errors import TransactionalIdAuthorizationError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import EndTxnRequest, EndTxnResponse


def handle(apis: KafkaApis, request: Request) -> EndTxnResponse | None:
    body = request.body
    assert isinstance(body, EndTxnRequest)
    if not apis.broker.auth(request).transactional_id(AclOperation.WRITE, body.transactional_id):
        return EndTxnResponse(throttle_time_ms=0, error_code=TransactionalIdAuthorizationError.code)
    transaction_coordinator(apis).handle_end_txn(
        EndTxnParams(body.transactional_id, body.producer_id, body.producer_epoch, body.committed),
        lambda error: apis.send_response(request, EndTxnResponse(
            throttle_time_ms=0, error_code=fenced_for_version(error, request.context.api_version, 2))))
    return None


API = ApiSpec(ApiKey.END_TXN, 0, 4, handle)

"""DescribeTransactions (key 65): state, producer id/epoch, timeout, start time and partitions of each
transactional id; TRANSACTIONAL_ID_NOT_FOUND for unknown ones. As Kafka: DESCRIBE on the transactional id is needed
(else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and only partitions of topics the principal may DESCRIBE are listed."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.txn_api_util import transaction_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import TransactionalIdAuthorizationError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeTransactionsRequest, DescribeTransactionsResponse

State = DescribeTransactionsResponse.TransactionState


def handle(apis: KafkaApis, request: Request) -> DescribeTransactionsResponse:
    body = request.body
    assert isinstance(body, DescribeTransactionsRequest)
    coordinator = transaction_coordinator(apis)
    auth = apis.broker.auth(request)
    states = []
    for transactional_id in body.transactional_ids:
        error, d = (coordinator.handle_describe(transactional_id)
                    if auth.transactional_id(AclOperation.DESCRIBE, transactional_id)
                    else (TransactionalIdAuthorizationError.code, None))
        if d is None:
            states.append(State(error_code=error, transactional_id=transactional_id, transaction_state="",
                                transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                                producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        described = auth.topics(AclOperation.DESCRIBE, (tp.topic for tp in d.partitions))
        for tp in (tp for tp in d.partitions if tp.topic in described):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        states.append(State(error_code=error, transactional_id=transactional_id, transaction_state=d.state,
                            transaction_timeout_ms=d.transaction_timeout_ms,
                            transaction_start_time_ms=d.transaction_start_time_ms, producer_id=d.producer_id,
                            producer_epoch=d.producer_epoch,
                            topics=[DescribeTransactionsResponse.TopicData(topic=t, partitions=p)
                                    for t, p in by_topic.items()]))
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


API = ApiSpec(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, handle)

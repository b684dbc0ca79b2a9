"""DescribeTransactions (key 65): state, producer id/epoch, timeout, start time and partitions of each
transactional id; TRANSACTIONAL_ID_NOT_FOUND for unknown ones."""

from __future__ import annotations

from mini_broker.network.request_channel import Request
from mini_broker.server.apis.txn_api_util import transaction_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import DescribeTransactionsRequest, DescribeTransactionsResponse

State = DescribeTransactionsResponse.TransactionState


def handle(apis: KafkaApis, request: Request) -> DescribeTransactionsResponse:
    body = request.body
    assert isinstance(body, DescribeTransactionsRequest)
    coordinator = transaction_coordinator(apis)
    states = []
    for transactional_id in body.transactional_ids:
        error, d = coordinator.handle_describe(transactional_id)
        if d is None:
            states.append(State(error_code=error, transactional_id=transactional_id, transaction_state="",
                                transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                                producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for tp in d.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        states.append(State(error_code=error, transactional_id=transactional_id, transaction_state=d.state,
                            transaction_timeout_ms=d.transaction_timeout_ms,
                            transaction_start_time_ms=d.transaction_start_time_ms, producer_id=d.producer_id,
                            producer_epoch=d.producer_epoch,
                            topics=[DescribeTransactionsResponse.TopicData(topic=t, partitions=p)
                                    for t, p in by_topic.items()]))
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


API = ApiSpec(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, handle)

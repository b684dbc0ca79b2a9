"""AddOffsetsToTxn (key 25): the group's ``__consumer_offsets`` partition joins the transaction, so that
the transaction's offset commits (TxnOffsetCommit) get its COMMIT/ABORT marker. WRITE on the transactional id is
needed (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group (else GROUP_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from mini_broker.group.group_metadata_manager import GROUP_METADATA_TOPIC_NAME
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.txn_api_util import fenced_for_version, transaction_coordinator
from mini_broker.server.coordinator_lookup import partition_for
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from mini_broker.transaction.transaction_requests import AddPartitionsParams
from pykafka_client.errors import GroupAuthorizationFailedError, TransactionalIdAuthorizationError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from pykafka_client.structs import TopicPartition


def offsets_partition_for(apis: KafkaApis, group_id: str) -> int:
    """Kafka's ``GroupCoordinator.partitionFor``: the group's ``__consumer_offsets`` partition, over the topic's
    partition count (a cluster: the topic in the metadata; a single broker: its group coordinator's local
    partitions)."""
    md = apis.broker.metadata_cache.get_topic(GROUP_METADATA_TOPIC_NAME)
    if md is not None:
        return partition_for(group_id, md.num_partitions)
    coordinator = apis.broker.group_coordinator
    return 0 if coordinator is None else coordinator.runtime.partition_for(group_id)


def handle(apis: KafkaApis, request: Request) -> AddOffsetsToTxnResponse | None:
    body = request.body
    assert isinstance(body, AddOffsetsToTxnRequest)
    auth = apis.broker.auth(request)
    if not auth.transactional_id(AclOperation.WRITE, body.transactional_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=TransactionalIdAuthorizationError.code)
    if not auth.group(AclOperation.READ, body.group_id):
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=GroupAuthorizationFailedError.code)
    partition = TopicPartition(GROUP_METADATA_TOPIC_NAME, offsets_partition_for(apis, body.group_id))
    transaction_coordinator(apis).handle_add_partitions(
        AddPartitionsParams(body.transactional_id, body.producer_id, body.producer_epoch, [partition]),
        lambda error: apis.send_response(request, AddOffsetsToTxnResponse(
            throttle_time_ms=0, error_code=fenced_for_version(error, request.context.api_version, 2))))
    return None


API = ApiSpec(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, handle)

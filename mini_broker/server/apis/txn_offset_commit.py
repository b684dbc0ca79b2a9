"""TxnOffsetCommit (key 28): offsets committed in a producer's transaction (``send_offsets_to_transaction``).
Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; the rest go to the group coordinator, which
writes them to ``__consumer_offsets`` as a transactional batch and holds them pending (invisible to
OffsetFetch) until the transaction's marker materializes (COMMIT) or drops (ABORT) them. v3+ carry the
KIP-447 member fields, checked as Kafka does (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID).
The transaction coordinator's AddOffsetsToTxn check is its own (the producer must have added the group).
Authorization as Kafka: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
(GROUP_AUTHORIZATION_FAILED), each for every partition, then READ on each topic (TOPIC_AUTHORIZATION_FAILED).
A KIP-848 consumer group checks the member and its epoch as for OffsetCommit (UNKNOWN_MEMBER_ID,
STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH); its offsets are then kept as those of a group without members, checked and committed with no online upgrade or
downgrade of the group in between."""

from __future__ import annotations

from mini_broker.group.group_requests import CommittedOffset, TxnOffsetCommitParams
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import (
    consumer_group_coordinator,
    group_coordinator,
    route_consumer_group_commit,
    split_unknown_partitions,
)
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError, TransactionalIdAuthorizationError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse


def handle(apis: KafkaApis, request: Request) -> TxnOffsetCommitResponse:
    body = request.body
    assert isinstance(body, TxnOffsetCommitRequest)
    broker = apis.broker
    now = broker.time.milliseconds()
    auth = broker.auth(request)
    denied = (TransactionalIdAuthorizationError.code if not auth.transactional_id(AclOperation.WRITE, body.transactional_id)
              else GroupAuthorizationFailedError.code if not auth.group(AclOperation.READ, body.group_id) else 0)
    errors, to_commit = split_unknown_partitions(broker, auth, body.topics, lambda p: CommittedOffset(
        p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now), denied)
    with consumer_group_coordinator(apis).group_types_held():  # checked and committed in one group type
        (member_id, generation, instance_id), to_commit = route_consumer_group_commit(
            apis, body.group_id, (body.member_id or "", body.generation_id, body.group_instance_id), to_commit,
            errors)
        if to_commit:
            errors.update(group_coordinator(apis).handle_txn_commit_offsets(TxnOffsetCommitParams(
                group_id=body.group_id, producer_id=body.producer_id, producer_epoch=body.producer_epoch,
                offsets=to_commit, member_id=member_id, generation_id=generation, group_instance_id=instance_id)))
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
        TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(name=topic.name, partitions=[
            TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=errors.get((topic.name, p.partition_index), 0))
            for p in topic.partitions])
        for topic in body.topics])


API = ApiSpec(ApiKey.TXN_OFFSET_COMMIT, 0, 4, handle)

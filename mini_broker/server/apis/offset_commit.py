"""OffsetCommit (key 8). Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; the rest go to the
group coordinator (generation/member checks, OFFSET_METADATA_TOO_LARGE). v1 may carry a commit timestamp,
v2-4 a retention time (-1 = broker default); v5+ neither. READ on the group is needed (else
GROUP_AUTHORIZATION_FAILED for every partition) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED).

A KIP-848 consumer group checks the member and its epoch first (v9+ carry them: UNKNOWN_MEMBER_ID,
STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH; a consumer-protocol member below v9: UNSUPPORTED_VERSION; a classic
member of the group: ILLEGAL_GENERATION unless its generation is its member epoch); its offsets are then stored as those of a group without members. The check and the commit are done with no online
upgrade or downgrade of the group in between."""

from __future__ import annotations

from mini_broker.group.group_requests import CommittedOffset, OffsetCommitParams
from mini_broker.network.request_channel import Request
from mini_broker.server.apis.group_api_util import (
    consumer_group_coordinator,
    group_coordinator,
    route_consumer_group_commit,
    split_unknown_partitions,
)
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import OffsetCommitRequest, OffsetCommitResponse


def handle(apis: KafkaApis, request: Request) -> OffsetCommitResponse:
    body = request.body
    assert isinstance(body, OffsetCommitRequest)
    version = request.context.api_version
    broker = apis.broker
    now = broker.time.milliseconds()

    def committed(p: OffsetCommitRequest.OffsetCommitRequestPartition) -> CommittedOffset:
        commit_ts = p.commit_timestamp if version == 1 and p.commit_timestamp >= 0 else now
        expire_ts = -1
        if 2 <= version <= 4 and body.retention_time_ms >= 0:
            expire_ts = commit_ts + body.retention_time_ms
        return CommittedOffset(p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", commit_ts,
                               expire_ts)

    auth = broker.auth(request)
    denied = 0 if auth.group(AclOperation.READ, body.group_id) else GroupAuthorizationFailedError.code
    errors, to_commit = split_unknown_partitions(broker, auth, body.topics, committed, denied)
    with consumer_group_coordinator(apis).group_types_held():  # checked and committed in one group type
        (member_id, generation, instance_id), to_commit = route_consumer_group_commit(
            apis, body.group_id, (body.member_id, body.generation_id_or_member_epoch, body.group_instance_id),
            to_commit, errors, version)
        if to_commit:
            errors.update(group_coordinator(apis).handle_commit_offsets(OffsetCommitParams(
                group_id=body.group_id, offsets=to_commit, member_id=member_id,
                generation_id=generation, group_instance_id=instance_id)))
    return OffsetCommitResponse(throttle_time_ms=0, topics=[
        OffsetCommitResponse.OffsetCommitResponseTopic(name=topic.name, partitions=[
            OffsetCommitResponse.OffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=errors.get((topic.name, p.partition_index), 0))
            for p in topic.partitions])
        for topic in body.topics])


API = ApiSpec(ApiKey.OFFSET_COMMIT, 0, 9, handle)

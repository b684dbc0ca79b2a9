"""OffsetFetch (key 9): committed offsets (-1 when none), whatever the group's state. v2+ may ask for all
partitions (null topics); v8+ batch several groups. Offsets pending in a transaction are not shown; with
``require_stable`` (v7+) a partition that has some answers UNSTABLE_OFFSET_COMMIT. v9+: a member of a KIP-848
consumer group reads with its current epoch (else UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH for the group)."""

from __future__ import annotations

from collections.abc import Sequence

from mini_broker.group.group_requests import FetchedOffset
from mini_broker.network.request_channel import Request
from mini_broker.security.auth_helper import RequestAuth
from mini_broker.server.apis.group_api_util import consumer_group_coordinator, group_coordinator
from mini_broker.server.kafka_apis import ApiSpec, KafkaApis
from pykafka_client.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
from pykafka_client.protocol.acl import AclOperation
from pykafka_client.protocol.api_keys import ApiKey
from pykafka_client.protocol.messages import OffsetFetchRequest, OffsetFetchResponse

Requested = Sequence[tuple[str, Sequence[int]]] | None


def _by_topic(requested: Requested, offsets: dict[tuple[str, int], FetchedOffset],
              error: int) -> list[tuple[str, list[tuple[int, FetchedOffset]]]]:
    """Requested order (or sorted, for all partitions); a group error goes to every requested partition."""
    out: list[tuple[str, list[tuple[int, FetchedOffset]]]] = []
    if requested is None:
        topics: dict[str, list[tuple[int, FetchedOffset]]] = {}
        for (t, p), fo in sorted(offsets.items()):
            topics.setdefault(t, []).append((p, fo))
        return list(topics.items())
    for name, partitions in requested:
        out.append((name, [(p, offsets.get((name, p), FetchedOffset(-1, -1, "", error))) for p in partitions]))
    return out


def _fetch(apis: KafkaApis, auth: RequestAuth, group_id: str, requested: Requested, require_stable: bool,
           member_id: str | None = None, member_epoch: int = -1
           ) -> tuple[int, list[tuple[str, list[tuple[int, FetchedOffset]]]]]:
    """Kafka's authorization: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic
    (requested partitions of other topics: TOPIC_AUTHORIZATION_FAILED; all partitions: only those topics').
    Then a KIP-848 consumer group's member epoch check (v9+)."""
    if not auth.group(AclOperation.DESCRIBE, group_id):
        return GroupAuthorizationFailedError.code, _by_topic(requested, {}, GroupAuthorizationFailedError.code)
    consumer_groups = consumer_group_coordinator(apis)
    with consumer_groups.group_types_held():  # the member checked in the group type the offsets are read from
        consumer_error = consumer_groups.validate_offset_fetch(group_id, member_id, member_epoch)
        if consumer_error:
            return consumer_error, []
        denied: set[str] = set()
        if requested is not None:
            names = [t for t, _ in requested]
            denied = set(names) - auth.topics(AclOperation.DESCRIBE, names)
        partitions = None if requested is None else [(t, p) for t, ps in requested for p in ps if t not in denied]
        error, offsets = group_coordinator(apis).handle_fetch_offsets(group_id, partitions, require_stable)
    offsets = dict(offsets)
    if requested is None and auth.enabled:
        readable = auth.topics(AclOperation.DESCRIBE, {t for t, _ in offsets})
        offsets = {tp: fo for tp, fo in offsets.items() if tp[0] in readable}
    for t, ps in requested or ():
        if t in denied:
            offsets.update({(t, p): FetchedOffset(-1, -1, "", TopicAuthorizationFailedError.code) for p in ps})
    return error, _by_topic(requested, offsets, error)


def handle(apis: KafkaApis, request: Request) -> OffsetFetchResponse:
    body = request.body
    assert isinstance(body, OffsetFetchRequest)
    version = request.context.api_version
    auth = apis.broker.auth(request)
    if version >= 8:
        groups = []
        for g in body.groups:
            requested = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
            error, topics = _fetch(apis, auth, g.group_id, requested, body.require_stable, g.member_id,
                                   g.member_epoch)
            groups.append(OffsetFetchResponse.OffsetFetchResponseGroup(group_id=g.group_id, error_code=error, topics=[
                OffsetFetchResponse.OffsetFetchResponseTopics(name=name, partitions=[
                    OffsetFetchResponse.OffsetFetchResponsePartitions(
                        partition_index=p, committed_offset=fo.offset, committed_leader_epoch=fo.leader_epoch,
                        metadata=fo.metadata, error_code=fo.error_code) for p, fo in parts])
                for name, parts in (topics if error == 0 else [])]))
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
    requested_v0 = None if body.topics is None else [(t.name, t.partition_indexes) for t in body.topics]
    error, topics = _fetch(apis, auth, body.group_id, requested_v0, version >= 7 and body.require_stable)
    if error != 0 and version >= 2:
        topics = []
    return OffsetFetchResponse(throttle_time_ms=0, error_code=error, topics=[
        OffsetFetchResponse.OffsetFetchResponseTopic(name=name, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=p, committed_offset=fo.offset, committed_leader_epoch=fo.leader_epoch,
                metadata=fo.metadata, error_code=fo.error_code) for p, fo in parts])
        for name, parts in topics])


API = ApiSpec(ApiKey.OFFSET_FETCH, 0, 9, handle)

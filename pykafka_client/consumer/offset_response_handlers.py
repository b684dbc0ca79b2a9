"""How the consumer coordinator handles OffsetFetch and OffsetCommit responses (Java:
ConsumerCoordinator.OffsetFetchResponseHandler and OffsetCommitResponseHandler), and the requests
they answer.

The handlers run in whichever thread polled the client; they complete the future the coordinator
returned to ``fetch_committed_offsets`` / ``commit_offsets_*`` and apply the group side effects an
error calls for (forget the coordinator, request a rejoin, reset the generation).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from pykafka_client.consumer.group_member import GroupMember
from pykafka_client.consumer.group_response_handlers import COORDINATOR_MOVED_ERRORS
from pykafka_client.consumer.member_state import Generation
from pykafka_client.errors import (
    CommitFailedError,
    GroupAuthorizationFailedError,
    IllegalGenerationError,
    IllegalStateError,
    RebalanceInProgressClientError,
    RebalanceInProgressError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownMemberIdError,
    UnstableOffsetCommitError,
    for_code,
)
from pykafka_client.network.request_future import RequestFuture
from pykafka_client.protocol.messages.offset_commit_request import OffsetCommitRequest
from pykafka_client.protocol.messages.offset_commit_response import OffsetCommitResponse
from pykafka_client.protocol.messages.offset_fetch_request import OffsetFetchRequest
from pykafka_client.protocol.messages.offset_fetch_response import OffsetFetchResponse
from pykafka_client.protocol.types import Writer
from pykafka_client.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

CommittedOffsets = dict[TopicPartition, OffsetAndMetadata | None]
_Partition = OffsetFetchResponse.OffsetFetchResponsePartition | OffsetFetchResponse.OffsetFetchResponsePartitions


#: The first OffsetFetch version with ``require_stable`` (KIP-447, Kafka 2.5).
REQUIRE_STABLE_OLDEST_VERSION = 7


class OffsetFetchRequestBuilder(OffsetFetchRequest):
    """An OffsetFetchRequest asking for stable offsets whose ``write`` drops ``require_stable`` where the
    negotiated version lacks it: an older coordinator cannot hold back offsets of open transactions, so
    the consumer reads what is committed, as Java's ``OffsetFetchRequest.Builder`` falls back."""

    __slots__ = ()

    def write(self, w: Writer, version: int) -> None:
        if version >= REQUIRE_STABLE_OLDEST_VERSION or not self.require_stable:
            super().write(w, version)
            return
        log.debug("OffsetFetch v%d has no require_stable (needs v%d+): fetching without it",
                  version, REQUIRE_STABLE_OLDEST_VERSION)
        OffsetFetchRequest(group_id=self.group_id, topics=self.topics).write(w, version)


#: OffsetFetch v9 names the member id and epoch of a consumer-protocol member (KIP-848)
OFFSET_FETCH_MEMBER_EPOCH_VERSION = 9


def offset_fetch_request(
    group_id: str, partitions: Collection[TopicPartition], member: Generation | None = None
) -> OffsetFetchRequest:
    """Committed offsets of ``partitions``, waiting for pending transactional commits (require_stable).
    With ``member`` (a consumer-protocol member with an epoch), the v8+ group form naming its member id and
    epoch, which only v9+ carries (Java: CommitRequestManager's OffsetFetch with the member's info)."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if member is not None:
        group = OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group_id,
            member_id=member.member_id,
            member_epoch=member.generation_id,
            topics=[
                OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=sorted(ps))
                for t, ps in by_topic.items()
            ],
        )
        return OffsetFetchRequest(groups=[group], require_stable=True)
    return OffsetFetchRequestBuilder(
        group_id=group_id,
        topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=sorted(ps))
            for t, ps in by_topic.items()
        ],
        require_stable=True,
    )


def handle_offset_fetch_response(
    c: GroupMember, body: OffsetFetchResponse, future: RequestFuture[CommittedOffsets]
) -> None:
    """The committed offset per partition (None where nothing is committed); a group error, an
    unauthorized topic or unstable offsets fail the future. A v8+ answer carries them in its one group."""
    group = body.groups[0] if body.groups else None
    error_code = group.error_code if group is not None else body.error_code
    if error_code != 0:
        cls = for_code(error_code)
        if cls in COORDINATOR_MOVED_ERRORS:
            c.mark_coordinator_unknown(f"{cls.name} from OffsetFetch")
        future.raise_(cls(f"OffsetFetch for group {c.rebalance_config.group_id} failed"))
        return
    out: dict[TopicPartition, OffsetAndMetadata | None] = {}
    unauthorized: set[str] = set()
    unstable = False
    topics: list[tuple[str, list[_Partition]]] = (
        [(t.name, list(t.partitions)) for t in group.topics] if group is not None
        else [(t.name, list(t.partitions)) for t in body.topics]
    )  # fmt: skip
    for name, partitions in topics:
        for p in partitions:
            tp = TopicPartition(name, p.partition_index)
            if p.error_code != 0:
                cls = for_code(p.error_code)
                if cls is TopicAuthorizationFailedError:
                    unauthorized.add(name)
                elif cls is UnstableOffsetCommitError:
                    unstable = True
                else:
                    future.raise_(cls(f"OffsetFetch for {tp} failed"))
                    return
            elif p.committed_offset >= 0:
                epoch = p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None
                out[tp] = OffsetAndMetadata(p.committed_offset, p.metadata or "", epoch)
            else:
                out[tp] = None
    if unauthorized:
        future.raise_(TopicAuthorizationFailedError(f"not authorized to read offsets of {sorted(unauthorized)}"))
    elif unstable:
        future.raise_(UnstableOffsetCommitError("there are unstable offsets for the requested partitions"))
    else:
        future.complete(out)


def offset_commit_request(
    group_id: str,
    group_instance_id: str | None,
    generation: Generation,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
) -> OffsetCommitRequest:
    """The commit of ``offsets`` by ``generation``; IllegalStateError for a negative offset."""
    by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
    for tp, om in offsets.items():
        if om.offset < 0:
            raise IllegalStateError(f"invalid offset {om.offset} for {tp}")
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
                committed_metadata=om.metadata,
            )
        )
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=generation.generation_id,
        member_id=generation.member_id,
        group_instance_id=group_instance_id,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def handle_offset_commit_response(
    c: GroupMember, gen: Generation, body: OffsetCommitResponse, future: RequestFuture[None]
) -> None:
    """The first partition error decides (group authorization, coordinator moved, rebalance, stale
    generation); unauthorized topics are reported together."""
    unauthorized: set[str] = set()
    for t in body.topics:
        for p in t.partitions:
            if p.error_code == 0:
                continue
            cls = for_code(p.error_code)
            tp = TopicPartition(t.name, p.partition_index)
            if cls is GroupAuthorizationFailedError:
                future.raise_(cls(f"not authorized to commit for group {c.rebalance_config.group_id}"))
                return
            if cls is TopicAuthorizationFailedError:
                unauthorized.add(t.name)
            elif cls in (*COORDINATOR_MOVED_ERRORS, RequestTimedOutError):
                c.mark_coordinator_unknown(f"{cls.name} from OffsetCommit")
                future.raise_(cls())
                return
            elif cls is RebalanceInProgressError:
                c.request_rejoin("group is rebalancing during OffsetCommit")
                future.raise_(
                    RebalanceInProgressClientError(
                        "offset commit cannot be completed since the group is rebalancing; call poll() to "
                        "complete the rebalance, then retry"
                    )
                )
                return
            elif cls in (UnknownMemberIdError, IllegalGenerationError):
                if c.generation_snapshot() == gen:
                    c.reset_generation_on_response_error("OffsetCommit", cls)
                future.raise_(
                    CommitFailedError(
                        f"commit failed with {cls.name}: the group has already rebalanced and assigned "
                        "the partitions to another member"
                    )
                )
                return
            else:
                future.raise_(cls(f"OffsetCommit for {tp} failed"))
                return
    if unauthorized:
        future.raise_(TopicAuthorizationFailedError(f"not authorized to commit to topics {sorted(unauthorized)}"))
    else:
        future.complete(None)


__all__ = [
    "CommittedOffsets",
    "handle_offset_commit_response",
    "handle_offset_fetch_response",
    "offset_commit_request",
    "offset_fetch_request",
]

"""LeaveGroup for the version the NetworkClient negotiates (Java: LeaveGroupRequest.Builder).

The NetworkClient picks the request version at send time, after the body is built. LeaveGroup
changed shape at v3: v0-2 name one member by ``member_id``; v3+ carry a ``members`` list (member id,
group instance id, and from v5 a reason) and have no ``member_id`` field. A body that sets both
cannot be encoded at any version, so the builder holds the v3+ form and writes the v0-2 form when the
negotiated version is older, as Java's ``Builder.build(version)`` does.
"""

from __future__ import annotations

from pykafka_client.errors import UnsupportedVersionError
from pykafka_client.protocol.messages.leave_group_request import LeaveGroupRequest
from pykafka_client.protocol.types import Writer

#: The first version with the ``members`` list (KIP-345, batch leave of static members).
FIRST_BATCH_VERSION = 3
#: Longest reason the client sends (Java: JoinGroupRequest.maybeTruncateReason).
MAX_REASON_LENGTH = 255


class LeaveGroupRequestBuilder(LeaveGroupRequest):
    """A LeaveGroupRequest in its v3+ form whose ``write`` adapts to older versions."""

    __slots__ = ()

    @classmethod
    def for_member(
        cls, group_id: str, member_id: str, group_instance_id: str | None, reason: str
    ) -> LeaveGroupRequestBuilder:
        member = LeaveGroupRequest.MemberIdentity(
            member_id=member_id, group_instance_id=group_instance_id, reason=reason[:MAX_REASON_LENGTH]
        )
        return cls(group_id=group_id, members=[member])

    def build(self, version: int) -> LeaveGroupRequest:
        """The request as it must be written at ``version``."""
        if version >= FIRST_BATCH_VERSION:
            return LeaveGroupRequest(group_id=self.group_id, members=list(self.members))
        if len(self.members) != 1:
            raise UnsupportedVersionError(
                f"LeaveGroup v{version} removes exactly one member, not {len(self.members)}; "
                f"the coordinator must support v{FIRST_BATCH_VERSION}+ for a batch leave"
            )
        if self.members[0].group_instance_id is not None:
            raise UnsupportedVersionError(
                f"LeaveGroup v{version} cannot remove a static member (group.instance.id); "
                f"the coordinator must support v{FIRST_BATCH_VERSION}+"
            )
        return LeaveGroupRequest(group_id=self.group_id, member_id=self.members[0].member_id)

    def write(self, w: Writer, version: int) -> None:
        self.build(version).write(w, version)


__all__ = ["FIRST_BATCH_VERSION", "LeaveGroupRequestBuilder"]

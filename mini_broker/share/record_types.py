"""The record types (key versions) of the share groups' records in ``__consumer_offsets`` (Kafka's numbers; see
:mod:`mini_broker.share.records`). Apart so that the offsets log's replay can route them without importing the
share groups."""

from __future__ import annotations

from typing import Final

MEMBER_METADATA: Final = 10
GROUP_METADATA: Final = 11
TARGET_ASSIGNMENT_METADATA: Final = 12
CURRENT_MEMBER_ASSIGNMENT: Final = 14
#: the share partitions of a group whose state the share coordinator may hold (Kafka's
#: ShareGroupStatePartitionMetadata)
STATE_PARTITION_METADATA: Final = 15
#: this broker's own: a share group's ``share.*`` configs (Kafka keeps group configs in the cluster metadata)
GROUP_CONFIG: Final = 100
#: the key versions of share-group records
SHARE_GROUP_KEY_VERSIONS: Final = frozenset({MEMBER_METADATA, GROUP_METADATA, TARGET_ASSIGNMENT_METADATA,
                                             CURRENT_MEMBER_ASSIGNMENT, STATE_PARTITION_METADATA,
                                             GROUP_CONFIG})

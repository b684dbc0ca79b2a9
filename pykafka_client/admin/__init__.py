"""The admin client (see docs/ARCHITECTURE.md): ``AdminClient`` and its argument/result types."""

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.config import AdminClientConfig
from pykafka_client.admin.group_types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    MemberDescription,
)
from pykafka_client.admin.types import (
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    CreateTopicResult,
    IsolationLevel,
    ListOffsetsResultInfo,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ProducerState,
    TopicDescription,
    TopicPartitionInfo,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)

__all__ = [
    "AdminClient",
    "AdminClientConfig",
    "AlterConfigOp",
    "AlterConfigOpType",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "MemberDescription",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "CreateTopicResult",
    "IsolationLevel",
    "ListOffsetsResultInfo",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "ProducerState",
    "TopicDescription",
    "TopicPartitionInfo",
    "TransactionDescription",
    "TransactionListing",
    "TransactionState",
]

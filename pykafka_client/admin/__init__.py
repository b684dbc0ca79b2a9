"""The admin client (see docs/ARCHITECTURE.md): ``AdminClient`` and its argument/result types."""

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.config import AdminClientConfig
from pykafka_client.admin.types import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
    ClientQuotaMatchType,
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
    TopicDescription,
    TopicPartitionInfo,
)

__all__ = [
    "AdminClient",
    "AdminClientConfig",
    "ClientQuotaAlteration",
    "ClientQuotaEntity",
    "ClientQuotaFilter",
    "ClientQuotaFilterComponent",
    "ClientQuotaMatchType",
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
    "TopicDescription",
    "TopicPartitionInfo",
]

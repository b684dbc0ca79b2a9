"""The arguments and results of :class:`~pykafka_client.admin.AdminClient` (Java ``admin.*`` value classes).

Plain frozen dataclasses; partitions in results are ``TopicPartition`` (equal to their ``(topic, partition)``
tuple); arguments take either.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pykafka_client.structs import Node, TopicPartition


@dataclass(frozen=True)
class NewTopic:
    """A topic to create. ``-1`` partitions / replication factor = the broker's defaults.
    ``replica_assignments`` maps partition -> broker ids (then counts must stay -1)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignments: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicResult:
    name: str
    topic_id: uuid.UUID | None
    num_partitions: int
    replication_factor: int


@dataclass(frozen=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions, optionally placing the new ones."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller: Node | None
    nodes: list[Node]


@dataclass(frozen=True)
class TopicPartitionInfo:
    partition: int
    leader: Node | None
    replicas: list[Node]
    isr: list[Node]
    leader_epoch: int | None = None


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: list[TopicPartitionInfo]


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 32  # Kafka's ConfigResource.Type.GROUP (KIP-848 group configs); 3 is the ACL ResourceType
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16


@dataclass(frozen=True)
class ConfigResource:
    type: ConfigResourceType
    name: str

    def __str__(self) -> str:
        """How messages name it: ``topic 'orders'``, ``broker 1``, ``broker default`` (the repr stays the
        dataclass's)."""
        kind = self.type.name.lower().replace("_", " ")
        if self.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
            return f"{kind} {self.name or 'default'}"
        return f"{kind} {self.name!r}"


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    is_read_only: bool = False
    is_sensitive: bool = False

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True)
class OffsetSpec:
    """Which offset ``list_offsets`` looks up: use the factories."""

    timestamp: int

    EARLIEST_TIMESTAMP = -2
    LATEST_TIMESTAMP = -1
    MAX_TIMESTAMP = -3

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(cls.EARLIEST_TIMESTAMP)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(cls.LATEST_TIMESTAMP)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The offset of the record with the highest timestamp (ListOffsets v7+)."""
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose timestamp is >= ``timestamp_ms``."""
        if timestamp_ms < 0:
            raise ValueError("timestamp must be non-negative")
        return cls(timestamp_ms)


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


@dataclass(frozen=True)
class ListOffsetsResultInfo:
    """``offset`` is -1 when no record matches a timestamp lookup."""

    offset: int
    timestamp: int
    leader_epoch: int | None


class TransactionState(enum.Enum):
    """A transaction's state as the coordinator names it (Java ``admin.TransactionState``)."""

    ONGOING = "Ongoing"
    PREPARE_ABORT = "PrepareAbort"
    PREPARE_COMMIT = "PrepareCommit"
    COMPLETE_ABORT = "CompleteAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    EMPTY = "Empty"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, name: str) -> TransactionState:
        for state in cls:
            if state.value == name:
                return state
        return cls.UNKNOWN


@dataclass(frozen=True)
class TransactionDescription:
    """One transactional id (Java ``admin.TransactionDescription``). ``transaction_start_time_ms`` None when
    no transaction is open; ``topic_partitions`` the partitions of the open transaction (while it is being
    committed or aborted: those without their marker yet)."""

    coordinator_id: int
    state: TransactionState
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    topic_partitions: frozenset[TopicPartition]


@dataclass(frozen=True)
class TransactionListing:
    """One entry of ``list_transactions`` (Java ``admin.TransactionListing``)."""

    transactional_id: str
    producer_id: int
    state: TransactionState


@dataclass(frozen=True)
class AbortTransactionSpec:
    """What ``abort_transaction`` needs to end one partition's open transaction (Java
    ``AbortTransactionSpec``): the partition, the producer id and epoch of the transaction, and the coordinator
    epoch to write the ABORT marker with. ``describe_producers`` gives all three; a producer state whose
    coordinator epoch is unknown (no marker yet) takes 0, as Kafka's ``kafka-transactions.sh abort`` does."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


@dataclass(frozen=True)
class ProducerState:
    """One active producer of a partition (Java ``ProducerState``, from ``describe_producers``).
    ``coordinator_epoch`` and ``current_transaction_start_offset`` are None when unknown / no open transaction."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


@dataclass(frozen=True)
class ReplicaInfo:
    """One replica's log in a log directory (Java ``ReplicaInfo``, from ``describe_log_dirs``): its size in bytes,
    how far its log end offset lags (the high watermark for a current log) and whether it is a future log being
    moved there by AlterReplicaLogDirs."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """One log directory of a broker (Java ``LogDirDescription``): its error (None when it is online), the
    replicas it holds per TopicPartition, and the total / usable bytes of its volume (None when the
    broker does not say: before DescribeLogDirs v4)."""

    error: BaseException | None
    replica_infos: Mapping[TopicPartition, ReplicaInfo]
    total_bytes: int | None = None
    usable_bytes: int | None = None


class ClientQuotaEntity:
    """Who a client quota is for (Java ``ClientQuotaEntity``): entity type -> name, with None for the type's
    default, e.g. ``ClientQuotaEntity({"user": "alice", "client-id": None})``. Types: ``user``,
    ``client-id``, ``ip``. Hashable (a result key)."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, str | None]) -> None:
        self._entries: tuple[tuple[str, str | None], ...] = tuple(sorted(dict(entries).items()))

    @property
    def entries(self) -> dict[str, str | None]:
        return dict(self._entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientQuotaEntity) and other._entries == self._entries

    def __hash__(self) -> int:
        return hash(self._entries)

    def __repr__(self) -> str:
        return f"ClientQuotaEntity({self.entries!r})"


@dataclass(frozen=True)
class ClientQuotaAlteration:
    """Changes to one entity's quotas (Java ``ClientQuotaAlteration``): ``ops`` maps a quota key
    (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``, ``connection_creation_rate``)
    to its new value, or to None to remove it."""

    entity: ClientQuotaEntity
    ops: Mapping[str, float | None]


class ClientQuotaMatchType(enum.IntEnum):
    EXACT = 0  # the named entity
    DEFAULT = 1  # the type's default entity
    SPECIFIED = 2  # any entity of the type


@dataclass(frozen=True)
class ClientQuotaFilterComponent:
    """One entity type of a filter (Java ``ClientQuotaFilterComponent``); use the ``of_*`` constructors."""

    entity_type: str
    match_type: ClientQuotaMatchType
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, ClientQuotaMatchType.EXACT, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, ClientQuotaMatchType.DEFAULT)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, ClientQuotaMatchType.SPECIFIED)


@dataclass(frozen=True)
class ClientQuotaFilter:
    """Which entities to describe (Java ``ClientQuotaFilter``): those matching every component; ``strict``
    leaves out entities that also have other types. ``ClientQuotaFilter.all()`` matches everything."""

    components: tuple[ClientQuotaFilterComponent, ...] = ()
    strict: bool = False

    @classmethod
    def contains(cls, components: Iterable[ClientQuotaFilterComponent]) -> ClientQuotaFilter:
        return cls(tuple(components), False)

    @classmethod
    def contains_only(cls, components: Iterable[ClientQuotaFilterComponent]) -> ClientQuotaFilter:
        return cls(tuple(components), True)

    @classmethod
    def all(cls) -> ClientQuotaFilter:
        return cls((), False)


# --- SCRAM credentials (AlterUserScramCredentials / DescribeUserScramCredentials) ------------------------


class ScramMechanismType(enum.IntEnum):
    """A SCRAM mechanism as the credential APIs number it (Java ``ScramMechanism``)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @classmethod
    def for_name(cls, name: str | ScramMechanismType) -> ScramMechanismType:
        if isinstance(name, ScramMechanismType) and name is not cls.UNKNOWN:
            return name
        for m in (cls.SCRAM_SHA_256, cls.SCRAM_SHA_512):
            if m.mechanism_name == str(name).upper():
                return m
        raise ValueError(f"unknown SCRAM mechanism {name!r}: use 'SCRAM-SHA-256' or 'SCRAM-SHA-512'")


@dataclass(frozen=True)
class ScramCredentialInfo:
    """One credential of a user: its mechanism and iteration count (never key material)."""

    mechanism: ScramMechanismType
    iterations: int


@dataclass(frozen=True)
class UserScramCredentialsDescription:
    """The SCRAM credentials a user has."""

    user: str
    credential_infos: list[ScramCredentialInfo]


@dataclass(frozen=True)
class UserScramCredentialUpsertion:
    """Create or replace ``user``'s credential for ``mechanism`` from ``password`` (salted here: only the salted
    password is sent). ``salt`` defaults to 32 random bytes."""

    user: str
    mechanism: ScramMechanismType | str
    password: str
    iterations: int = 4096
    salt: bytes | None = None


@dataclass(frozen=True)
class UserScramCredentialDeletion:
    """Delete ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: ScramMechanismType | str


class ElectionType(enum.IntEnum):
    """ElectLeaders' kind of election (Java ``ElectionType``)."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class PartitionReassignment:
    """An ongoing reassignment (Java ``PartitionReassignment``): every replica, and those being added / removed."""

    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]

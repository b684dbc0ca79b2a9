"""The table of admin APIs: each AdminClient operation's name and the class whose ``call(ctx, ...)`` runs it
(in the spirit of franz-go kfake's request table and Java's per-API ``AdminApiHandler``). Each AdminClient
method is one line: ``api(name, kind).call(self._ctx, ...)``. A new API is a module in ``admin/handlers/`` and
an entry here (and the one-line method in AdminClient and AsyncAdminClient).

Every entry is an :class:`~pykafka_client.admin.api_handler.AdminApiHandler` class run by the generic driver
(``admin/api_driver.py``).
"""

from __future__ import annotations

from typing import TypeVar

from pykafka_client.admin.handlers.abort_transaction import AbortTransactionHandler
from pykafka_client.admin.handlers.alter_client_quotas import AlterClientQuotasHandler
from pykafka_client.admin.handlers.alter_consumer_group_offsets import AlterConsumerGroupOffsetsHandler
from pykafka_client.admin.handlers.alter_partition_reassignments import AlterPartitionReassignmentsHandler
from pykafka_client.admin.handlers.alter_share_group_offsets import AlterShareGroupOffsetsHandler
from pykafka_client.admin.handlers.alter_user_scram_credentials import AlterUserScramCredentialsHandler
from pykafka_client.admin.handlers.create_acls import CreateAclsHandler
from pykafka_client.admin.handlers.create_partitions import CreatePartitionsHandler
from pykafka_client.admin.handlers.create_topics import CreateTopicsHandler
from pykafka_client.admin.handlers.delete_acls import DeleteAclsHandler
from pykafka_client.admin.handlers.delete_consumer_group_offsets import DeleteConsumerGroupOffsetsHandler
from pykafka_client.admin.handlers.delete_consumer_groups import DeleteConsumerGroupsHandler
from pykafka_client.admin.handlers.delete_records import DeleteRecordsHandler
from pykafka_client.admin.handlers.delete_share_group_offsets import DeleteShareGroupOffsetsHandler
from pykafka_client.admin.handlers.delete_share_groups import DeleteShareGroupsHandler
from pykafka_client.admin.handlers.delete_topics import DeleteTopicsHandler
from pykafka_client.admin.handlers.describe_acls import DescribeAclsHandler
from pykafka_client.admin.handlers.describe_client_quotas import DescribeClientQuotasHandler
from pykafka_client.admin.handlers.describe_cluster import DescribeClusterHandler
from pykafka_client.admin.handlers.describe_configs import DescribeConfigsHandler
from pykafka_client.admin.handlers.describe_consumer_groups import DescribeConsumerGroupsHandler
from pykafka_client.admin.handlers.describe_log_dirs import DescribeLogDirsHandler
from pykafka_client.admin.handlers.describe_producers import DescribeProducersHandler
from pykafka_client.admin.handlers.describe_share_groups import DescribeShareGroupsHandler
from pykafka_client.admin.handlers.describe_topics import DescribeTopicsHandler
from pykafka_client.admin.handlers.describe_transactions import DescribeTransactionsHandler
from pykafka_client.admin.handlers.describe_user_scram_credentials import DescribeUserScramCredentialsHandler
from pykafka_client.admin.handlers.elect_leaders import ElectLeadersHandler
from pykafka_client.admin.handlers.incremental_alter_configs import IncrementalAlterConfigsHandler
from pykafka_client.admin.handlers.list_consumer_group_offsets import ListConsumerGroupOffsetsHandler
from pykafka_client.admin.handlers.list_consumer_groups import ListConsumerGroupsHandler
from pykafka_client.admin.handlers.list_groups import ListGroupsHandler
from pykafka_client.admin.handlers.list_offsets import ListOffsetsHandler
from pykafka_client.admin.handlers.list_partition_reassignments import ListPartitionReassignmentsHandler
from pykafka_client.admin.handlers.list_share_group_offsets import ListShareGroupOffsetsHandler
from pykafka_client.admin.handlers.list_topics import ListTopicsHandler
from pykafka_client.admin.handlers.list_transactions import ListTransactionsHandler
from pykafka_client.errors import IllegalStateError

H = TypeVar("H")

#: every AdminClient operation -> its AdminApiHandler class (whose ``call`` runs it)
ADMIN_APIS: dict[str, type] = {
    "describe_cluster": DescribeClusterHandler,
    "create_topics": CreateTopicsHandler,
    "delete_topics": DeleteTopicsHandler,
    "create_partitions": CreatePartitionsHandler,
    "describe_topics": DescribeTopicsHandler,
    "elect_leaders": ElectLeadersHandler,
    "alter_partition_reassignments": AlterPartitionReassignmentsHandler,
    "list_partition_reassignments": ListPartitionReassignmentsHandler,
    "list_topics": ListTopicsHandler,
    "alter_client_quotas": AlterClientQuotasHandler,
    "describe_client_quotas": DescribeClientQuotasHandler,
    "describe_configs": DescribeConfigsHandler,
    "incremental_alter_configs": IncrementalAlterConfigsHandler,
    "describe_log_dirs": DescribeLogDirsHandler,
    "list_consumer_groups": ListConsumerGroupsHandler,
    "describe_consumer_groups": DescribeConsumerGroupsHandler,
    "delete_consumer_groups": DeleteConsumerGroupsHandler,
    "list_groups": ListGroupsHandler,
    "describe_share_groups": DescribeShareGroupsHandler,
    "delete_share_groups": DeleteShareGroupsHandler,
    "list_share_group_offsets": ListShareGroupOffsetsHandler,
    "alter_share_group_offsets": AlterShareGroupOffsetsHandler,
    "delete_share_group_offsets": DeleteShareGroupOffsetsHandler,
    "list_consumer_group_offsets": ListConsumerGroupOffsetsHandler,
    "alter_consumer_group_offsets": AlterConsumerGroupOffsetsHandler,
    "delete_consumer_group_offsets": DeleteConsumerGroupOffsetsHandler,
    "delete_records": DeleteRecordsHandler,
    "list_offsets": ListOffsetsHandler,
    "describe_producers": DescribeProducersHandler,
    "describe_transactions": DescribeTransactionsHandler,
    "list_transactions": ListTransactionsHandler,
    "abort_transaction": AbortTransactionHandler,
    "create_acls": CreateAclsHandler,
    "describe_acls": DescribeAclsHandler,
    "delete_acls": DeleteAclsHandler,
    "alter_user_scram_credentials": AlterUserScramCredentialsHandler,
    "describe_user_scram_credentials": DescribeUserScramCredentialsHandler,
}


def api(name: str, kind: type[H]) -> type[H]:
    """The table's entry for operation ``name``, which must be ``kind`` (or a subclass of it)."""
    entry = ADMIN_APIS.get(name)
    if entry is None or not issubclass(entry, kind):
        raise IllegalStateError(f"the admin API table has {entry!r} for {name!r}, not a {kind.__name__}: "
                                "register the operation's class in pykafka_client/admin/api_table.py")
    return entry

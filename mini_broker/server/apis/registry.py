"""The APIs this broker serves. Adding one: a module with ``API = ApiSpec(...)`` and a line below."""

from __future__ import annotations

from mini_broker.server.apis import (
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    fetch,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    produce,
)
from mini_broker.server.kafka_apis import ApiSpec

ALL_APIS: list[ApiSpec] = [
    produce.API,
    fetch.API,
    list_offsets.API,
    metadata.API,
    api_versions.API,
    create_topics.API,
    delete_topics.API,
    delete_records.API,
    describe_configs.API,
    create_partitions.API,
    incremental_alter_configs.API,
    describe_cluster.API,
    init_producer_id.API,
    offset_for_leader_epoch.API,
]

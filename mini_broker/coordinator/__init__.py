"""The coordinator runtime (Kafka: ``org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime``): what every
coordinator of an internal partition shares (the group coordinator on ``__consumer_offsets``, the transaction
coordinator on ``__transaction_state``; the KIP-848 and share group coordinators next)."""

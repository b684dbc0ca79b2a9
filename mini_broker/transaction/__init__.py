"""The transaction coordinator (Kafka's ``kafka.coordinator.transaction``) and its seams to the partition logs."""

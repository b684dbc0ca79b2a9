"""mini_broker: a Kafka-compatible broker in Python, built like Kafka's own (see docs/ARCHITECTURE.md)."""

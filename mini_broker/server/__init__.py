"""The broker's request handling: handler pool, KafkaApis dispatch, ReplicaManager, metadata."""

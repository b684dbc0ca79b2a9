"""Kafka's command-line scripts (``kafka-topics.sh``, ``kafka-console-producer.sh``, ...) on the ``pykafka`` CLI:
each module reads one script's flags as Kafka's tool does, calls the CLI's functions and prints Kafka's output,
with Kafka's exit codes (0, or 1 for any failure). The shell scripts in ``../kafka_home/bin`` run
``python -m pykafka_client.cli.kafka_scripts SCRIPT ARGS...``; ``pykafka kafka-path`` prints ``kafka_home``."""

"""The script a ``bin/`` wrapper names, to its module's ``main``."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

#: Each script of ``kafka_home/bin`` and the module (of this package) that implements it.
SCRIPTS = {
    "kafka-topics.sh": "topics",
    "kafka-configs.sh": "configs",
    "kafka-console-producer.sh": "console_producer",
    "kafka-console-consumer.sh": "console_consumer",
    "kafka-consumer-groups.sh": "consumer_groups",
    "kafka-transactions.sh": "transactions",
    "kafka-producer-perf-test.sh": "producer_perf",
    "kafka-acls.sh": "acls",
}


#: Kafka's tool classes (the last part of the name ``kafka-run-class.sh`` takes, in ``kafka.tools``,
#: ``kafka.admin`` or ``org.apache.kafka.tools``) and the script that is each one here.
TOOL_CLASSES = {
    "TopicCommand": "kafka-topics.sh",
    "ConfigCommand": "kafka-configs.sh",
    "ConsoleProducer": "kafka-console-producer.sh",
    "ConsoleConsumer": "kafka-console-consumer.sh",
    "ConsumerGroupCommand": "kafka-consumer-groups.sh",
    "TransactionsCommand": "kafka-transactions.sh",
    "ProducerPerformance": "kafka-producer-perf-test.sh",
    "AclCommand": "kafka-acls.sh",
}


def main(argv: Sequence[str]) -> int:
    """``argv``: the script's name (or, as ``kafka-run-class.sh`` takes it, Kafka's tool class), then its
    arguments."""
    if argv and "." in argv[0] and not argv[0].endswith(".sh"):
        argv = [TOOL_CLASSES.get(argv[0].rsplit(".", 1)[-1], argv[0]), *argv[1:]]
    if not argv or argv[0] not in SCRIPTS:
        print(f"usage: python -m pykafka_client.cli.kafka_scripts SCRIPT [ARGS...], SCRIPT one of "
              f"{', '.join(SCRIPTS)}", file=sys.stderr)
        return 1
    module = importlib.import_module(f"pykafka_client.cli.kafka_scripts.{SCRIPTS[argv[0]]}")
    return int(module.main(list(argv[1:])))

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
}


def main(argv: Sequence[str]) -> int:
    """``argv``: the script's name, then its arguments."""
    if not argv or argv[0] not in SCRIPTS:
        print(f"usage: python -m pykafka_client.cli.kafka_scripts SCRIPT [ARGS...], SCRIPT one of "
              f"{', '.join(SCRIPTS)}", file=sys.stderr)
        return 1
    module = importlib.import_module(f"pykafka_client.cli.kafka_scripts.{SCRIPTS[argv[0]]}")
    return int(module.main(list(argv[1:])))

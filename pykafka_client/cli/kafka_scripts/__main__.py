"""``python -m pykafka_client.cli.kafka_scripts kafka-topics.sh --list ...``: what ``bin/kafka-topics.sh`` runs."""

import sys

from pykafka_client.cli.kafka_scripts.dispatch import main

sys.exit(main(sys.argv[1:]))

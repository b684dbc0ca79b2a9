"""``python -m pykafka_client.cli.kafka_scripts kafka-topics.sh --list ...``: what ``bin/kafka-topics.sh`` runs."""

import sys

from pykafka_client.cli.kafka_scripts.dispatch import main

if __name__ == "__main__":  # importing the module (e.g. walking the package) must not run the tool
    sys.exit(main(sys.argv[1:]))

"""The ``pykafka`` command-line tool (issue 14): Kafka's console tools (topics, console producer and
consumer, consumer groups, configs, get-offsets, perf tests) built on this package's clients.

``python -m pykafka_client.cli`` and the ``pykafka`` console script run :func:`pykafka_client.cli.main.main`.
Standard library only (argparse, json). Exit codes are listed in :mod:`pykafka_client.cli.common`.
"""

"""A PLAINTEXT client never loads the ssl module (about 5 MiB of resident memory): the transport imports it when a
TLS connection is made (its context comes from ssl_factory, which imports it)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_clients_does_not_load_ssl() -> None:
    code = (
        "import sys\n"
        "import pykafka_client\n"
        "from pykafka_client import KafkaProducer, KafkaConsumer\n"
        "from pykafka_client.network.transport import channel_builder, selector, transport_layer\n"
        "print('ssl' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False", out.stderr

"""``python -m pykafka_client.cli``: the same as the ``pykafka`` console script."""

import sys

from pykafka_client.cli.main import main

sys.exit(main())

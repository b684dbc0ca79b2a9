"""``python -m pykafka_client.cli``: the same as the ``pykafka`` console script."""

import sys

from pykafka_client.cli.main import main

if __name__ == "__main__":  # importing the module (e.g. walking the package) must not run the tool
    sys.exit(main())

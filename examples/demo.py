"""The README demo. Grows with the project: today it shows the error table."""

from __future__ import annotations

from pykafka_client.errors import BROKER_ERRORS


def main() -> int:
    retriable = sum(1 for cls in BROKER_ERRORS.values() if cls.retriable)
    print(f"pykafka-client knows {len(BROKER_ERRORS)} Kafka error codes ({retriable} retriable).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

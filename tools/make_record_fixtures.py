"""Write small record-batch fixtures with an independent encoder (kafka-python 3.0.x).

Run from the repository root: ``.venv/bin/python tools/make_record_fixtures.py``. Writes
``tests/fixtures/records/*.bin`` and ``manifest.json`` (the records each file must decode to), which
``tests/unit/protocol/records/test_records_fixtures.py`` checks against our decoder. The fixtures are
checked in so the test does not depend on kafka-python's codecs at test time. kafka-python writes
snappy with xerial framing and lz4 as independent-block frames, as the Java client does.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "records"
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1_700_000_000_000


def _records(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        key = None if i % 4 == 0 else f"key-{i}".encode()
        value = None if i % 7 == 3 else (f"value-{i}-".encode() * (1 + i % 5))
        headers = [(f"h{j}", None if j == 1 else bytes([i, j])) for j in range(i % 3)]
        out.append(
            {"offset_delta": i, "timestamp": BASE_TS + i * 3 - (i % 2), "key": key, "value": value, "headers": headers}
        )
    return out


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def _expected(records: list[dict[str, Any]], base_offset: int, timestamps: bool = True) -> list[dict[str, Any]]:
    return [
        {
            "offset": base_offset + r["offset_delta"],
            "timestamp": r["timestamp"] if timestamps else -1,
            "key": _hex(r["key"]),
            "value": _hex(r["value"]),
            "headers": [[k, _hex(v)] for k, v in r["headers"]],
        }
        for r in records
    ]


def v2_batch(codec: str, transactional: bool) -> tuple[bytes, dict[str, Any]]:
    records = _records(12)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODECS[codec],
        is_transactional=transactional,
        producer_id=4242 if transactional else -1,
        producer_epoch=7 if transactional else -1,
        base_sequence=100 if transactional else -1,
        batch_size=1 << 20,
    )
    for r in records:
        builder.append(
            r["offset_delta"], timestamp=r["timestamp"], key=r["key"], value=r["value"], headers=r["headers"]
        )
    raw = bytes(builder.build())
    meta = {
        "magic": 2,
        "compression": codec,
        "transactional": transactional,
        "producer_id": 4242 if transactional else -1,
        "producer_epoch": 7 if transactional else -1,
        "base_sequence": 100 if transactional else -1,
        "max_timestamp": max(r["timestamp"] for r in records),
        "records": _expected(records, 0),
    }
    return raw, meta


def legacy_set(magic: int, codec: str) -> tuple[bytes, dict[str, Any]]:
    records = _records(6)
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=CODECS[codec], batch_size=1 << 20)
    for r in records:
        builder.append(r["offset_delta"], timestamp=r["timestamp"] if magic else None, key=r["key"], value=r["value"])
        r["headers"] = []
    raw = bytes(builder.build())
    if magic == 1 and codec != "none":
        # A client writes the wrapper with offset 0; the broker stores the absolute offset of the last
        # inner message there (inner offsets are relative in v1). Store it as a broker would.
        raw = struct.pack(">q", len(records) - 1) + raw[8:]
    meta = {"magic": magic, "compression": codec, "records": _expected(records, 0, timestamps=magic == 1)}
    return raw, meta


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {}
    cases: dict[str, tuple[bytes, dict[str, Any]]] = {
        "v2_none.bin": v2_batch("none", False),
        "v2_gzip_txn.bin": v2_batch("gzip", True),
        "v2_snappy_xerial.bin": v2_batch("snappy", False),
        "v2_lz4_frame.bin": v2_batch("lz4", True),
        "v2_zstd.bin": v2_batch("zstd", False),
        "v0_none.bin": legacy_set(0, "none"),
        "v0_gzip.bin": legacy_set(0, "gzip"),
        "v1_snappy.bin": legacy_set(1, "snappy"),
        "v1_lz4.bin": legacy_set(1, "lz4"),
    }
    for name, (raw, meta) in cases.items():
        (OUT / name).write_bytes(raw)
        manifest[name] = meta
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} fixtures to {OUT}")


if __name__ == "__main__":
    main()

"""Record batch encode/decode throughput: ours vs kafka-python and aiokafka, in one run.

Run: ``.venv/bin/python bench/records.py [--records N]``. Each case encodes ``N`` records (100-byte
values, 10-byte keys, no headers) into batches of ``PER_BATCH`` records, or decodes those batches
reading offset, timestamp, key, value and headers of every record. Best of ``--repeat`` runs, the libraries taking turns within each repeat.
Prints records/s, our speed as a ratio of each other library's and of our own pure-Python fallback (the
compiled record kernel switched off in-process), and our CPU per record. Bounded to roughly 10-30 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections.abc import Callable

from pykafka_client.protocol.compression import CompressionType
from pykafka_client.protocol.records import MemoryRecords, MemoryRecordsBuilder, _native

PER_BATCH = 500
VALUE = bytes(range(100))
CODECS = [CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD]


def _keys(n: int) -> list[bytes]:
    return [b"key-%06d" % i for i in range(n)]


def ours_encode(codec: CompressionType, n: int) -> list[bytes]:
    out = []
    keys = _keys(n)
    ts = 1_700_000_000_000
    for start in range(0, n, PER_BATCH):
        b = MemoryRecordsBuilder(codec, write_limit=1 << 24)
        for i in range(start, min(n, start + PER_BATCH)):
            b.append(ts, keys[i], VALUE, None)
        out.append(b.build())
    return out


def ours_decode(batches: list[bytes]) -> int:
    count = 0
    for raw in batches:
        for r in MemoryRecords(raw).records():
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018
            count += 1
    return count


def _their_encode(builder_cls: type) -> Callable[[CompressionType, int], list[bytes]]:
    def encode(codec: CompressionType, n: int) -> list[bytes]:
        out = []
        keys = _keys(n)
        ts = 1_700_000_000_000
        for start in range(0, n, PER_BATCH):
            b = builder_cls(
                magic=2,
                compression_type=int(codec),
                is_transactional=False,
                producer_id=-1,
                producer_epoch=-1,
                base_sequence=-1,
                batch_size=1 << 24,
            )
            for i in range(start, min(n, start + PER_BATCH)):
                b.append(i - start, timestamp=ts, key=keys[i], value=VALUE, headers=[])
            out.append(bytes(b.build()))
        return out

    return encode


def _their_decode(memory_records_cls: type) -> Callable[[list[bytes]], int]:
    def decode(batches: list[bytes]) -> int:
        count = 0
        for raw in batches:
            mr = memory_records_cls(raw)
            while True:
                batch = mr.next_batch()
                if batch is None:
                    break
                for r in batch:
                    r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018
                    count += 1
        return count

    return decode


def _on_fallback(fn: Callable[..., object]) -> Callable[..., object]:
    """``fn`` run with the compiled kernel switched off (the pure-Python reference)."""

    def run(*args: object) -> object:
        previous = _native.use_native(False)
        try:
            return fn(*args)
        finally:
            _native.use_native(previous)

    return run


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=15_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, repeat = args.records, args.repeat

    libs: dict[str, tuple[Callable[..., object], Callable[..., object]]] = {"pykafka_client": (ours_encode, ours_decode)}
    if _native.native_available():
        libs["ours (python)"] = (_on_fallback(ours_encode), _on_fallback(ours_decode))
    print(f"pykafka_client record kernel: {'compiled' if _native.native_enabled() else 'NOT available (fallback only)'}")
    from kafka.record.default_records import DefaultRecordBatchBuilder as KBuilder
    from kafka.record.memory_records import MemoryRecords as KRecords

    libs["kafka-python"] = (_their_encode(KBuilder), _their_decode(KRecords))
    import aiokafka
    from aiokafka.record.default_records import DefaultRecordBatchBuilder as ABuilder
    from aiokafka.record.memory_records import MemoryRecords as ARecords

    libs["aiokafka"] = (_their_encode(ABuilder), _their_decode(ARecords))
    compiled = importlib.util.find_spec("aiokafka.record._crecords.default_records") is not None
    import kafka

    print(
        f"kafka-python {kafka.__version__}; aiokafka {aiokafka.__version__} (C extensions compiled: {compiled}, "
        f"builder in use: {ABuilder.__module__}.{ABuilder.__name__})"
    )
    print(f"{n} records per case, 100-byte values, 10-byte keys, {PER_BATCH} records per batch, best of {repeat}")
    print()
    header = (
        f"{'op':<7}{'codec':<6}"
        + "".join(f"{name + ' rec/s':>22}" for name in libs)
        + f"{'ours/python':>12}{'ours/kafka-python':>20}{'ours/aiokafka':>16}{'ours us/rec':>13}"
    )
    print(header)
    for op in ("encode", "decode"):
        for codec in CODECS:
            # Libraries take turns within each repeat, so load changes on a shared machine hit all of them.
            jobs: dict[str, Callable[[], object]] = {}
            for name, (enc, dec) in libs.items():
                if op == "encode":
                    jobs[name] = lambda enc=enc, codec=codec: enc(codec, n)  # type: ignore[misc]
                else:
                    batches = ours_encode(codec, n)
                    assert dec(batches) == n
                    jobs[name] = lambda dec=dec, batches=batches: dec(batches)  # type: ignore[misc]
            best = dict.fromkeys(jobs, float("inf"))
            for _ in range(repeat):
                for name, job in jobs.items():
                    best[name] = min(best[name], _best(job, 1))
            rates = {name: n / secs for name, secs in best.items()}
            ours = rates["pykafka_client"]
            fallback = rates.get("ours (python)", ours)
            print(
                f"{op:<7}{codec.name:<6}"
                + "".join(f"{rate:>22,.0f}" for rate in rates.values())
                + f"{ours / fallback:>11.2f}x{ours / rates['kafka-python']:>19.2f}x{ours / rates['aiokafka']:>15.2f}x"
                + f"{1e6 / ours:>13.2f}"
            )


if __name__ == "__main__":
    main()

"""Property test: cut the segment files anywhere after a crash; reopening serves exactly the whole batches
before the cut, and the next append continues right after them."""

from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from mini_broker.log import Log, LogConfig
from pykafka_client.utils.time import MockTime

from .helpers import batch, records_of


@settings(max_examples=40, deadline=None)
@given(
    batch_sizes=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=12),
    value_len=st.integers(min_value=0, max_value=300),
    cut_fraction=st.floats(min_value=0.0, max_value=1.0),
    segment_bytes=st.sampled_from([300, 1000, 1 << 20]),
)
def test_any_cut_keeps_exactly_the_whole_batches_before_it(
    batch_sizes: list[int], value_len: int, cut_fraction: float, segment_bytes: int
) -> None:
    time = MockTime()
    config = LogConfig.from_props({"segment.bytes": segment_bytes, "index.interval.bytes": 100})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p-0")
        log = Log(path, config, time=time)
        ends: list[tuple[int, int, int]] = []  # (segment base, byte end of batch in segment, next offset)
        for n in batch_sizes:
            log.append(batch([bytes([65 + i]) * value_len for i in range(n)]))
            seg = log.active_segment
            ends.append((seg.base_offset, seg.size, log.log_end_offset))
        log.close()
        last = log.active_segment
        cut = int(last.size * cut_fraction)
        with open(last.log_path, "r+b") as f:
            f.truncate(cut)
        # What survives: every batch of earlier segments, and the batches of the last one ending by the cut.
        surviving = [e for e in ends if e[0] != last.base_offset or e[1] <= cut]
        expected_end = surviving[-1][2] if surviving else last.base_offset
        reopened = Log(path, config, time=time, had_clean_shutdown=False)
        try:
            assert reopened.log_end_offset == expected_end
            offsets: list[int] = []
            offset = reopened.log_start_offset
            while offset < reopened.log_end_offset:
                recs = records_of(reopened.read(offset, 1 << 20).to_bytes())
                offsets += [r.offset for r in recs if r.offset >= offset]
                offset = offsets[-1] + 1
            assert offsets == list(range(reopened.log_start_offset, expected_end))
            assert reopened.append(batch([b"next"])).first_offset == expected_end
        finally:
            reopened.close()

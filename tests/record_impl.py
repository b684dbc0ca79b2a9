"""Running tests on both record implementations: the compiled kernel and the pure-Python reference.

``record_impl`` is parametrized ``native`` / ``python`` and switches the process-wide implementation
(``_native.use_native``) for the test. Without a built kernel the ``native`` cases skip, except in CI,
where the kernel must have been built (see tests/test_ci_environment.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykafka_client.protocol.records import _native

IMPLEMENTATIONS = ["native", "python"]


@pytest.fixture(params=IMPLEMENTATIONS)
def record_impl(request: pytest.FixtureRequest) -> Iterator[str]:
    native = request.param == "native"
    if native and not _native.native_available():
        pytest.skip("the compiled record kernel is not built")
    previous = _native.use_native(native)
    try:
        yield str(request.param)
    finally:
        _native.use_native(previous)

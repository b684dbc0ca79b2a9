"""CRC-32C (Castagnoli), the checksum of a magic v2 record batch: the ``crc32c`` package's compiled function.

Importing the ``crc32c`` package runs its ``__init__``, which reads the package's own version through
``importlib.metadata`` (and with it the email parser, zipfile, csv, pathlib, ...): about 2.5 MiB of resident memory
in every client process, for a version string no client reads. Only the compiled function is needed, so the
package's extension module is loaded alone, without the package (nothing is added to ``sys.modules``). When the
package is already imported, or its layout is not the expected one, the package's own function is used.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from typing import Any, cast

Buffer = bytes | bytearray | memoryview


def _load_extension_alone() -> Callable[[Buffer], int] | None:
    """``crc32c._crc32c.crc32c`` loaded from its file, without running the package's ``__init__``; None if the
    package is not laid out that way."""
    spec = importlib.util.find_spec("crc32c")  # (finds the package without importing it)
    if spec is None or not spec.submodule_search_locations:
        return None
    ext_spec = importlib.machinery.PathFinder.find_spec("crc32c._crc32c", list(spec.submodule_search_locations))
    if ext_spec is None or not isinstance(ext_spec.loader, importlib.machinery.ExtensionFileLoader):
        return None
    module = importlib.util.module_from_spec(ext_spec)
    ext_spec.loader.exec_module(module)
    function: Any = getattr(module, "crc32c", None)
    return cast("Callable[[Buffer], int]", function) if callable(function) else None


def _load() -> Callable[[Buffer], int]:
    if "crc32c" not in sys.modules:
        try:
            function = _load_extension_alone()
        except (ImportError, OSError):
            function = None
        if function is not None:
            return function
    from crc32c import crc32c as package_function

    return cast("Callable[[Buffer], int]", package_function)


#: ``crc32c(data, value=0) -> int``: the CRC-32C of ``data`` (any bytes-like object).
crc32c: Callable[[Buffer], int] = _load()

"""The wheel a user installs (issue 9 item 9): built from a copy of the source tree, installed into a fresh
venv without extras, it imports, runs ``mini-broker --help`` and ``pykafka --help``, ships LICENSE, NOTICE and py.typed, declares
the SPDX license and ``Typing :: Typed``, and the build prints no deprecation warning.

Needs PyPI (the isolated build fetches setuptools>=77; the install fetches the runtime dependencies).
"""

from __future__ import annotations

import email
import venv
import zipfile
from pathlib import Path

import pytest

from tests.packaging.installs import run as _run

pytestmark = pytest.mark.slow


def test_build_prints_no_deprecation_warning(built_wheel: tuple[Path, str]) -> None:
    _, log = built_wheel
    assert "SetuptoolsDeprecationWarning" not in log
    assert "DEPRECATION" not in log
    assert "deprecated" not in log.lower()


def test_wheel_ships_license_notice_and_py_typed(built_wheel: tuple[Path, str]) -> None:
    wheel, _ = built_wheel
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        licenses = {n.rsplit("/", 1)[-1] for n in names if n.startswith(f"{dist_info}/")}
        assert {"LICENSE", "NOTICE"} <= licenses
        assert "Apache License" in z.read(next(n for n in names if n.endswith("/LICENSE") and dist_info in n)).decode()
        assert "Apache Kafka" in z.read(next(n for n in names if n.endswith("/NOTICE") and dist_info in n)).decode()
        assert {"pykafka_client/py.typed", "mini_broker/py.typed"} <= set(names)
        # the Spark source and the module PySpark's lookup auto-registers it from
        assert {"spark_connector/source.py", "pyspark_pykafka/__init__.py"} <= set(names)
        meta = email.message_from_bytes(z.read(f"{dist_info}/METADATA"))
    assert meta["License-Expression"] == "Apache-2.0"
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)
    requires = {r.split(";")[0].split(">")[0].split("=")[0].strip() for r in meta.get_all("Requires-Dist") or []
                if "extra ==" not in r}
    assert requires == {"anyio", "cramjam", "crc32c", "sortedcontainers", "typing-extensions"}


def test_wheel_ships_the_compiled_record_kernel(built_wheel: tuple[Path, str]) -> None:
    """Issue 15: a wheel for users includes the compiled record kernel (the build machine has a C compiler)."""
    wheel, _ = built_wheel
    assert wheel.name.endswith("linux_x86_64.whl") or "manylinux" in wheel.name or "-cp3" in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as z:
        kernels = [n for n in z.namelist() if n.startswith("pykafka_client/protocol/records/_kernel.") and n.endswith(".so")]
    assert len(kernels) == 1, kernels


def test_wheel_installs_without_extras_and_runs(built_wheel: tuple[Path, str], tmp_path: Path) -> None:
    wheel, _ = built_wheel
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    _run(bin_dir / "pip", "install", "--quiet", "--disable-pip-version-check", wheel, cwd=tmp_path, timeout=180)
    help_text = _run(bin_dir / "mini-broker", "--help", cwd=tmp_path)
    assert "--listeners" in help_text
    assert "exit codes:" in _run(bin_dir / "pykafka", "--help", cwd=tmp_path)
    where = _run(
        bin_dir / "python", "-c",
        "import pykafka_client, mini_broker; from pykafka_client import KafkaProducer, KafkaConsumer, AdminClient; "
        "print(pykafka_client.__file__, mini_broker.__file__)",
        cwd=tmp_path,
    )
    assert all(str(env_dir) in p for p in where.split()), where
    native = _run(bin_dir / "python", "-c", "import pykafka_client; print(pykafka_client.native_enabled())", cwd=tmp_path)
    assert native.strip() == "True", native

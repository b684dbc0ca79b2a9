"""Installs as users make them, shared by the packaging tests (session-scoped: each costs tens of seconds).

- ``built_wheel``: the wheel built from a copy of the source tree (``pip wheel``, isolated build);
- ``dev_venv``: a venv made by ``./dev setup`` in a copy of the source tree (the same editable install as
  ``./dev``'s .venv, with only the ``spark`` and ``trio`` extras);
- ``wheel_venv``: a fresh venv after ``pip install '<wheel>[spark,trio]'`` (what a user of the package has).

Needs PyPI or pip's cache (the isolated build fetches setuptools>=77; installs fetch the dependencies).
"""

from __future__ import annotations

import sys
import venv
from pathlib import Path

import pytest

from tests.packaging.installs import copy_source, run, user_env


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(wheel path, verbose build output)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = copy_source(tmp / "src")
    out = tmp / "dist"
    log = run(sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", out, source, cwd=tmp, timeout=300)
    wheels = list(out.glob("pykafka_client-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], log


def _module_file(python: Path, module: str, cwd: Path) -> Path:
    return Path(run(python, "-c", f"import {module}; print({module}.__file__)", cwd=cwd).strip().splitlines()[-1])


@pytest.fixture(scope="session")
def dev_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a venv that ``./dev setup`` made (editable install of a copy of this checkout)."""
    tmp = tmp_path_factory.mktemp("dev-venv")
    source = copy_source(tmp / "checkout")
    run(source / "dev", "setup", cwd=tmp, timeout=600,
        env=user_env(PYKAFKA_DEV_EXTRAS="spark,trio", PYTHON=sys.executable))
    python = source / ".venv" / "bin" / "python"
    # editable: the packages are the checkout's files, also seen from another directory
    assert _module_file(python, "pyspark_pykafka", cwd=tmp).is_relative_to(source)
    return python


@pytest.fixture(scope="session")
def wheel_venv(built_wheel: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv with the built wheel and its ``spark`` and ``trio`` extras installed (not editable)."""
    wheel, _ = built_wheel
    tmp = tmp_path_factory.mktemp("wheel-venv")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", f"{wheel}[spark,trio]", cwd=tmp, timeout=600)
    assert _module_file(python, "pyspark_pykafka", cwd=tmp).is_relative_to(env_dir)
    return python

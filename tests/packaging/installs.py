"""Running installs and programs the way a user does: a shell with no virtualenv activated."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.pyc", "*.egg-info", "build", "dist", "data", ".*_cache", ".hypothesis", "tests",
    "bench", ".dev-stamp", "checkpoints", "python-path",
)
_JAVA_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def user_env(**extra: str) -> dict[str, str]:
    """This process's environment as a user's shell has it: no virtualenv activated (no venv's bin on PATH, no
    VIRTUAL_ENV), no PYTHONPATH and no PYSPARK_PYTHON (the Spark test fixtures set both in this process)."""
    dropped = {"PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p).parent / "pyvenv.cfg").exists()]
    env["PATH"] = os.pathsep.join(path)
    return {**env, **extra}


def run(*args: str | Path, cwd: Path, timeout: float = 120, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=dict(env or user_env()), capture_output=True,
                          text=True, timeout=timeout)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        # without the JVM's stack frames, which would push Spark's error message out of the report
        shown = "\n".join(line for line in output.splitlines() if not _JAVA_FRAME.match(line))
        pytest.fail(f"{args} failed (exit {done.returncode}):\n{shown[-6000:]}")
    return output


def copy_source(to: Path) -> Path:
    shutil.copytree(ROOT, to, ignore=_NOT_SOURCE)
    return to

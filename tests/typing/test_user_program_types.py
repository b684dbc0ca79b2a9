"""The library as a typed user sees it: ``mypy --strict`` on user_program.py (produce, consume with a
group, admin, callbacks, (de)serializers, seek with a producer's metadata, ``except KafkaError``, a
config-dict consumer and producer with string (de)serializers) and on its async twin async_user_program.py
(pykafka_client.aio) must pass with no ignores; reveal_types.py pins the inferred KafkaConsumer[K, V];
type_errors.py proves the check can fail (each line marked ``# error`` must be reported).

mypy runs as in a user's project: the files are copied to a directory outside the repository, which is
mypy's working directory, and the library is the one installed in this environment (an install mode that
hides the package from mypy fails here, with the fix). The examples are checked with ``mypy --strict
examples`` from the repository root."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FILES = ("user_program.py", "async_user_program.py", "reveal_types.py", "type_errors.py")
_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")


_NOT_FOUND = 'Cannot find implementation or library stub for module named "pykafka_client'


def _run_mypy(args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """``python -m mypy`` of this interpreter's environment, as a user runs it: no MYPYPATH or PYTHONPATH
    pointing into the checkout, so the library is the one installed in the environment's site-packages."""
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--show-absolute-path", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    if "Traceback" in proc.stderr or proc.returncode not in (0, 1):
        pytest.fail(f"mypy did not run: {proc.stderr or proc.stdout}")
    if _NOT_FOUND in proc.stdout:
        pytest.fail(
            "mypy, run outside the repository, cannot find the installed pykafka_client: the environment "
            "installs it in a mode that hides it from type checkers (setuptools' default editable install "
            "resolves imports with an import hook that mypy does not run). Reinstall it with "
            "`pip install -e '.[dev,interop,spark]' --config-settings editable_mode=compat` (or strict, or a "
            f"non-editable install).\nmypy said:\n{proc.stdout}"
        )
    return proc


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, str, str]]]:
    """One mypy run over the user files (the library is analysed once); messages per file name. The files
    and the mypy configuration are copied to a directory outside the repository, which is mypy's working
    directory, as in a user's project."""
    project = tmp_path_factory.mktemp("user_project").resolve()
    for name in (*FILES, "mypy.ini"):
        shutil.copy(HERE / name, project / name)
    proc = _run_mypy(["--config-file", "mypy.ini", *FILES], project, tmp_path_factory.mktemp("mypy_cache"))
    out: dict[str, list[tuple[int, str, str]]] = {f: [] for f in FILES}
    for raw in proc.stdout.splitlines():
        m = _LINE.match(raw)
        if m is None:
            continue
        path = Path(m["file"]).resolve()
        if path.parent != project or path.name not in out:
            pytest.fail(f"mypy reported outside the user files: {raw}")
        out[path.name].append((int(m["line"]), m["kind"], m["text"]))
    return out


def _marked(name: str, marker: str) -> dict[int, str]:
    lines = (HERE / name).read_text().splitlines()
    return {i: line.split(marker, 1)[1].strip() for i, line in enumerate(lines, 1) if marker in line}


def test_user_program_passes_mypy_strict(mypy_output: dict[str, list[tuple[int, str, str]]]) -> None:
    assert mypy_output["user_program.py"] == []
    assert "type: ignore" not in (HERE / "user_program.py").read_text()


def test_async_user_program_passes_mypy_strict(mypy_output: dict[str, list[tuple[int, str, str]]]) -> None:
    """The async twin (pykafka_client.aio under asyncio or trio) is typed as strictly as the sync program."""
    assert mypy_output["async_user_program.py"] == []
    assert "type: ignore" not in (HERE / "async_user_program.py").read_text()


def test_consumer_types_are_inferred_from_the_deserializers(
    mypy_output: dict[str, list[tuple[int, str, str]]],
) -> None:
    expected = _marked("reveal_types.py", "# revealed:")
    got = {
        line: text.removeprefix("Revealed type is ").strip('"')
        for line, kind, text in mypy_output["reveal_types.py"]
        if kind == "note" and text.startswith("Revealed type is")
    }
    errors = [m for m in mypy_output["reveal_types.py"] if m[1] == "error"]
    assert errors == []
    assert got == expected


def test_a_type_error_in_user_code_is_reported(mypy_output: dict[str, list[tuple[int, str, str]]]) -> None:
    expected = set(_marked("type_errors.py", "# error"))
    reported = {line for line, kind, _ in mypy_output["type_errors.py"] if kind == "error"}
    assert expected and reported == expected, mypy_output["type_errors.py"]


def test_examples_pass_mypy_strict(tmp_path: Path) -> None:
    """``mypy --strict examples/`` from the repository root, as a contributor runs it: the examples are
    user code too (their consumers are typed by annotations where the config names the deserializers)."""
    proc = _run_mypy(["--strict", "examples"], ROOT, tmp_path / "cache")
    assert proc.returncode == 0, proc.stdout

"""The library as a typed user sees it: ``mypy --strict`` on user_program.py (produce, consume with a
group, admin, callbacks, (de)serializers, seek with a producer's metadata, ``except KafkaError``) and on its
async twin async_user_program.py (pykafka_client.aio) must pass with no ignores; reveal_types.py pins
the inferred KafkaConsumer[K, V]; type_errors.py proves
the check can fail (each line marked ``# error`` must be reported)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FILES = ("user_program.py", "async_user_program.py", "reveal_types.py", "type_errors.py")
_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, str, str]]]:
    """One mypy run over the three files (the library is analysed once); messages per file name."""
    cache = tmp_path_factory.mktemp("mypy_cache")
    env = {**os.environ, "MYPYPATH": str(ROOT)}  # the library of this checkout, not an installed copy
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(HERE / "mypy.ini"),
            "--cache-dir",
            str(cache),
            "--show-absolute-path",
            *(str(HERE / f) for f in FILES),
        ],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    if "Traceback" in proc.stderr or proc.returncode not in (0, 1):
        pytest.fail(f"mypy did not run: {proc.stderr or proc.stdout}")
    out: dict[str, list[tuple[int, str, str]]] = {f: [] for f in FILES}
    for raw in proc.stdout.splitlines():
        m = _LINE.match(raw)
        if m is None:
            continue
        path = Path(m["file"])
        if path.parent != HERE or path.name not in out:
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

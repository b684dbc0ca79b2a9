"""``bin/kafka-run-class.sh`` (what every ``bin/kafka-*.sh`` execs) finds the Python the package is installed in
from its own path: a virtualenv's or a prefix's ``lib/pythonX.Y/site-packages``, the interpreter ``pykafka
kafka-path`` recorded, a checkout's ``.venv`` (``./dev setup``), ``$PYKAFKA_PYTHON`` first of all; and it says what
to do when it finds none. Each case lays the scripts out in a temporary tree with a fake ``python`` that prints
how it was called."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pykafka_client.cli.kafka_scripts.dispatch import SCRIPTS
from pykafka_client.cli.kafka_scripts.home import INTERPRETER_FILE, KAFKA_HOME, prepare

BIN = KAFKA_HOME / "bin"


def _fake_python(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\necho "$0 $*"\n')
    path.chmod(0o755)
    return path


def _install(home: Path) -> Path:
    """The scripts copied to ``home/bin`` (as an install would place them)."""
    shutil.copytree(BIN, home / "bin")
    return home


def _run(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=30, env={**base, **env})


def test_every_script_of_kafka_is_there_and_executable() -> None:
    for name in SCRIPTS:
        assert os.access(BIN / name, os.X_OK), name
    assert os.access(BIN / "kafka-run-class.sh", os.X_OK)


def test_a_virtualenv_install_runs_the_virtualenvs_python(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = _fake_python(venv / "bin" / "python3.11")
    home = _install(venv / "lib" / "python3.11" / "site-packages" / "pykafka_client" / "cli" / "kafka_home")
    done = _run(home / "bin" / "kafka-topics.sh", "--list", "--bootstrap-server", "h:1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(python), "-m", "pykafka_client.cli.kafka_scripts", "kafka-topics.sh", "--list",
                                   "--bootstrap-server", "h:1"]


def test_a_symlinked_script_still_finds_its_python(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = _fake_python(venv / "bin" / "python3.12")
    home = _install(venv / "lib" / "python3.12" / "site-packages" / "pykafka_client" / "cli" / "kafka_home")
    link = tmp_path / "elsewhere" / "kafka-configs.sh"
    link.parent.mkdir()
    link.symlink_to(home / "bin" / "kafka-configs.sh")
    done = _run(link, "--describe")
    assert done.stdout.split()[:4] == [str(python), "-m", "pykafka_client.cli.kafka_scripts", "kafka-configs.sh"]


def test_the_recorded_interpreter_serves_an_install_outside_site_packages(tmp_path: Path) -> None:
    python = _fake_python(tmp_path / "somewhere" / "python")
    home = _install(tmp_path / "src" / "pykafka_client" / "cli" / "kafka_home")
    prepare(home, str(python))
    assert (home / INTERPRETER_FILE).read_text().strip() == str(python)
    done = _run(home / "bin" / "kafka-console-producer.sh", "--topic", "t")
    assert done.stdout.split()[0] == str(python)


def test_an_editable_checkout_runs_its_dot_venv(tmp_path: Path) -> None:
    python = _fake_python(tmp_path / "checkout" / ".venv" / "bin" / "python")
    home = _install(tmp_path / "checkout" / "pykafka_client" / "cli" / "kafka_home")
    done = _run(home / "bin" / "kafka-consumer-groups.sh", "--list")
    assert done.stdout.split()[0] == str(python)


def test_pykafka_python_wins(tmp_path: Path) -> None:
    chosen = _fake_python(tmp_path / "chosen" / "python")
    _fake_python(tmp_path / "checkout" / ".venv" / "bin" / "python")
    home = _install(tmp_path / "checkout" / "pykafka_client" / "cli" / "kafka_home")
    done = _run(home / "bin" / "kafka-transactions.sh", "list", PYKAFKA_PYTHON=str(chosen))
    assert done.stdout.split()[0] == str(chosen)


def test_no_python_found_says_what_to_do(tmp_path: Path) -> None:
    home = _install(tmp_path / "nowhere" / "kafka_home")
    tools = tmp_path / "tools"  # the commands the script uses, and no python3
    tools.mkdir()
    for name in ("dirname", "readlink"):
        found = shutil.which(name)
        assert found is not None
        (tools / name).symlink_to(found)
    done = _run(home / "bin" / "kafka-topics.sh", "--list", PATH=str(tools))
    assert done.returncode == 1
    assert "cannot find the Python that pykafka-client is installed in" in done.stderr
    assert "PYKAFKA_PYTHON" in done.stderr


def test_prepare_restores_lost_executable_bits(tmp_path: Path) -> None:
    home = _install(tmp_path / "kafka_home")
    script = home / "bin" / "kafka-topics.sh"
    script.chmod(0o644)
    prepare(home, "/usr/bin/python3")
    assert os.access(script, os.X_OK)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_each_script_names_itself_to_the_front_end(name: str, tmp_path: Path) -> None:
    python = _fake_python(tmp_path / "checkout" / ".venv" / "bin" / "python")
    home = _install(tmp_path / "checkout" / "pykafka_client" / "cli" / "kafka_home")
    done = _run(home / "bin" / name, "--help")
    assert done.stdout.split() == [str(python), "-m", "pykafka_client.cli.kafka_scripts", name, "--help"]

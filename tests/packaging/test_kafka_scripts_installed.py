"""Kafka's scripts from an install as users make them (issue 28 item 3): the wheel ships ``bin/kafka-*.sh``
executable, and in the wheel's venv and in ``./dev setup``'s editable venv a script run by path (no virtualenv
activated) finds the Python the package is installed in, before and after ``pykafka kafka-path`` (which prints
the directory above ``bin/``)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_broker.broker import MiniBroker
from pykafka_client.cli.kafka_scripts.dispatch import SCRIPTS
from tests.packaging.installs import run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker() -> Iterator[MiniBroker]:
    with MiniBroker() as b:
        yield b


def test_wheel_ships_the_scripts_executable(built_wheel: tuple[Path, str]) -> None:
    wheel, _ = built_wheel
    with zipfile.ZipFile(wheel) as z:
        modes = {i.filename.rsplit("/", 1)[-1]: (i.external_attr >> 16) & 0o777 for i in z.infolist()
                 if i.filename.startswith("pykafka_client/cli/kafka_home/bin/")}
    assert set(modes) == {*SCRIPTS, "kafka-run-class.sh"}, modes
    assert all(mode & 0o111 == 0o111 for mode in modes.values()), modes


def _scripts_work(python: Path, broker: MiniBroker, tmp_path: Path) -> None:
    home = Path(run(python, "-c", "from pykafka_client.cli.kafka_scripts.home import KAFKA_HOME; print(KAFKA_HOME)",
                    cwd=tmp_path).strip().splitlines()[-1])
    topic = f"installed-{tmp_path.name}"
    # found from the script's own path, before kafka-path recorded anything
    assert not (home / "python-path").exists()
    created = run(home / "bin" / "kafka-topics.sh", "--create", "--topic", topic, "--bootstrap-server",
                  broker.bootstrap_servers, cwd=tmp_path)
    assert f"Created topic {topic}." in created
    kafka_path = Path(run(python.parent / "pykafka", "kafka-path", cwd=tmp_path).strip().splitlines()[-1])
    assert kafka_path == home
    listed = run(kafka_path / "bin" / "kafka-topics.sh", "--list", "--bootstrap-server", broker.bootstrap_servers,
                 cwd=tmp_path)
    assert topic in listed.split()


def test_scripts_run_from_the_wheels_venv(wheel_venv: Path, broker: MiniBroker, tmp_path: Path) -> None:
    _scripts_work(wheel_venv, broker, tmp_path)


def test_scripts_run_from_dev_setups_editable_venv(dev_venv: Path, broker: MiniBroker, tmp_path: Path) -> None:
    _scripts_work(dev_venv, broker, tmp_path)

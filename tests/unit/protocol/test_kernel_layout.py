"""The C kernel's layout: ``records/_kernel.c`` is one translation unit that includes its parts
(``records/kernel/*.c.h``). Every part is included exactly once, nothing else is included from there, and setup.py's
``depends`` lists every part (an edited part rebuilds the kernel; the sdist carries the depends), so a part cannot be
forgotten. Reads the sources only: no compiler needed."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
RECORDS = ROOT / "pykafka_client" / "protocol" / "records"
KERNEL = RECORDS / "_kernel.c"
PARTS = RECORDS / "kernel"

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _parts() -> list[str]:
    return sorted(p.name for p in PARTS.iterdir() if p.is_file())


def test_the_kernel_has_parts_and_each_is_a_c_h_file() -> None:
    names = _parts()
    assert names, "records/kernel/ holds the kernel's parts"
    assert all(n.endswith(".c.h") for n in names), names
    assert not (PARTS / "__init__.py").exists()  # C included into one unit, not a Python package


def test_kernel_c_includes_every_part_exactly_once() -> None:
    includes = INCLUDE.findall(KERNEL.read_text(encoding="utf-8"))
    local = [i for i in includes if i.startswith("kernel/")]
    assert sorted(local) == [f"kernel/{n}" for n in _parts()], "each part once, and no include of a missing part"
    assert len(local) == len(set(local))
    assert local == includes, "the kernel's own includes are its parts (the system headers use <...>)"


def test_no_part_includes_another() -> None:
    # the order of the parts is the one list in _kernel.c
    for name in _parts():
        assert INCLUDE.findall((PARTS / name).read_text(encoding="utf-8")) == [], name


def test_setup_py_depends_covers_every_part(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr("setuptools.setup", lambda **kwargs: seen.update(kwargs))
    monkeypatch.chdir(ROOT)  # setup.py's paths are relative to the project root, where a build runs it
    runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
    (ext,) = seen["ext_modules"]
    assert ext.name == "pykafka_client.protocol.records._kernel"
    assert ext.sources == ["pykafka_client/protocol/records/_kernel.c"]
    assert sorted(ext.depends) == [f"pykafka_client/protocol/records/kernel/{n}" for n in _parts()]


def test_the_sources_name_no_helper_branch() -> None:
    # section headings say what the code does, not which round of work added it ("h/<branch>'s region")
    for path in [KERNEL, *(PARTS / n for n in _parts())]:
        text = path.read_text(encoding="utf-8")
        assert re.search(r"\bh/[a-z]", text) is None, path.name
        assert "'s region" not in text, path.name


def test_the_layout_descriptions_name_every_part() -> None:
    # _kernel.c's opening comment and docs/ARCHITECTURE.md ("Record fast path") each list the parts by name
    opening = KERNEL.read_text(encoding="utf-8").split("*/", 1)[0]
    architecture = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for name in _parts():
        part = name.removesuffix(".c.h")
        assert re.search(rf"\b{part}\b", opening), f"_kernel.c's opening comment does not name {part}"
        assert f"`{part}`" in architecture, f"docs/ARCHITECTURE.md does not name the kernel part {part}"

"""The README as the tests read it: its ``## `` sections and their fenced code blocks, in order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"

#: the address every README snippet connects to (the only text a test substitutes in a snippet)
README_BOOTSTRAP = '"localhost:9092"'

_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\n(?P<code>.*?)^```$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    section: str  # the title of the ``## `` section holding the block ("" before the first one)
    lang: str
    code: str


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def code_blocks(text: str | None = None) -> list[Block]:
    """Every fenced block of the README, with the ``## `` section it is in."""
    text = readme_text() if text is None else text
    blocks: list[Block] = []
    for number, part in enumerate(re.split(r"^## ", text, flags=re.M)):
        title = part.split("\n", 1)[0].strip() if number else ""
        blocks += [Block(title, m["lang"], m["code"]) for m in _FENCE.finditer(part)]
    return blocks


def python_blocks(section: str) -> list[str]:
    """The python blocks of one ``## `` section, in order; fails if it has none (the README changed)."""
    found = [b.code for b in code_blocks() if b.section == section and b.lang == "python"]
    assert found, f"README.md has no python block in a section titled {section!r}"
    return found


def with_bootstrap(code: str, bootstrap: str) -> str:
    """``code`` connecting to ``bootstrap`` instead of the README's localhost:9092."""
    assert README_BOOTSTRAP in code, f"the snippet no longer connects to {README_BOOTSTRAP}:\n{code}"
    return code.replace(README_BOOTSTRAP, repr(bootstrap))

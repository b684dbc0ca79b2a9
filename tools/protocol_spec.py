"""The vendored Kafka message specs as data: JSON-with-comments loading, version ranges and the field,
struct and message definitions the code generator works from (part of ``tools/generate_protocol.py``)."""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC_DIR = ROOT / "pykafka_client" / "protocol" / "specs"
OUT_DIR = ROOT / "pykafka_client" / "protocol" / "messages"
API_KEYS_FILE = ROOT / "pykafka_client" / "protocol" / "api_keys.py"

MAX_VERSION = 0x7FFF

# type -> (struct code, size)
FIXED: dict[str, tuple[str, int]] = {
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "bool": ("?", 1),
    "uuid": ("16s", 16),
}
PY_TYPES = {
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "bool": "bool",
    "uuid": "uuid.UUID",
    "string": "str",
    "bytes": "bytes",
    "records": "RecordsLike",
}
RESERVED = {"write", "read", "encode", "decode", "self", "cls", "r", "w", "field", "unsupported_version"}


# --- spec parsing --------------------------------------------------------------------------------


def strip_comments(text: str) -> str:
    """Remove // comments (to end of line) outside JSON strings."""
    out: list[str] = []
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            out.append(c)
            i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def load_spec(path: Path) -> dict[str, Any]:
    d: dict[str, Any] = json.loads(strip_comments(path.read_text(encoding="utf-8")))
    return d


Range = tuple[int, int] | None


def parse_versions(s: str | None) -> Range:
    if s is None or s == "none":
        return None
    s = s.strip()
    if s.endswith("+"):
        return (int(s[:-1]), MAX_VERSION)
    if "-" in s:
        lo, hi = s.split("-")
        return (int(lo), int(hi))
    return (int(s), int(s))


def in_range(v: int, r: Range) -> bool:
    return r is not None and r[0] <= v <= r[1]


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    if keyword.iskeyword(s) or s in RESERVED:
        s += "_"
    return s


def parse_int(s: str) -> int:
    s = s.strip()
    neg = s.startswith("-")
    body = s[1:] if neg else s
    if body.lower().startswith("0x"):
        v = int(body, 16)
    elif len(body) > 1 and body.startswith("0"):
        v = int(body, 8)
    else:
        v = int(body)
    return -v if neg else v


@dataclass
class FieldDef:
    name: str  # JSON name
    attr: str
    type: str  # JSON type
    versions: Range
    nullable: Range
    tag: int | None
    tagged: Range
    default: str | None
    ignorable: bool
    flex_override: Range | str  # "inherit" or a range (None = never flexible)
    entity_type: str | None
    map_key: bool
    zero_copy: bool
    about: str

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def elem(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.elem[:1].isupper()

    @property
    def optional(self) -> bool:
        return self.nullable is not None or self.default == "null" or self.type == "records"


@dataclass
class StructDef:
    name: str
    fields: list[FieldDef]
    versions: set[int] = field(default_factory=set)
    deps: list[str] = field(default_factory=list)


@dataclass
class MessageDef:
    name: str
    file: str
    type: str
    api_key: int | None
    valid: tuple[int, int]
    flex_min: int | None
    latest_unstable: bool
    listeners: list[str]
    fields: list[FieldDef]
    structs: dict[str, StructDef]

    @property
    def module(self) -> str:
        return snake(self.name)


def parse_field(f: dict[str, Any]) -> FieldDef:
    tag = f.get("tag")
    flex = f.get("flexibleVersions")
    default = f.get("default")
    if default is not None and not isinstance(default, str):
        default = json.dumps(default)
    return FieldDef(
        name=f["name"],
        attr=snake(f["name"]),
        type=f["type"],
        versions=parse_versions(f.get("versions")),
        nullable=parse_versions(f.get("nullableVersions")),
        tag=None if tag is None else int(tag),
        tagged=parse_versions(f.get("taggedVersions")),
        default=default,
        ignorable=bool(f.get("ignorable", False)),
        flex_override="inherit" if flex is None else parse_versions(flex),
        entity_type=f.get("entityType"),
        map_key=bool(f.get("mapKey", False)),
        zero_copy=bool(f.get("zeroCopy", False)),
        about=str(f.get("about", "")),
    )


def parse_message(path: Path) -> MessageDef:
    d = load_spec(path)
    valid = parse_versions(d["validVersions"])
    assert valid is not None
    flex = parse_versions(d.get("flexibleVersions"))
    structs: dict[str, StructDef] = {}
    raw_structs: dict[str, list[dict[str, Any]]] = {}

    def collect(fields: list[dict[str, Any]]) -> None:
        for f in fields:
            if "fields" in f:
                t = f["type"]
                sname = t[2:] if t.startswith("[]") else t
                if sname in raw_structs and raw_structs[sname] != f["fields"]:
                    raise SystemExit(f"{path.name}: struct {sname} defined twice differently")
                raw_structs[sname] = f["fields"]
                collect(f["fields"])

    collect(d.get("fields", []))
    for cs in d.get("commonStructs", []):
        if cs["name"] in raw_structs:
            raise SystemExit(f"{path.name}: common struct {cs['name']} clashes")
        raw_structs[cs["name"]] = cs["fields"]
        collect(cs["fields"])
    for sname, fl in raw_structs.items():
        structs[sname] = StructDef(sname, [parse_field(f) for f in fl])
    top = [parse_field(f) for f in d.get("fields", [])]
    msg = MessageDef(
        name=d["name"],
        file=path.name,
        type=d["type"],
        api_key=d.get("apiKey"),
        valid=valid,
        flex_min=None if flex is None else flex[0],
        latest_unstable=bool(d.get("latestVersionUnstable", False)),
        listeners=list(d.get("listeners", [])),
        fields=top,
        structs=structs,
    )
    # versions in which each struct is used
    def mark(fields: list[FieldDef], vs: set[int]) -> None:
        for f in fields:
            if f.is_struct:
                st = structs.get(f.elem)
                if st is None:
                    raise SystemExit(f"{path.name}: unknown struct type {f.elem}")
                used = {v for v in vs if in_range(v, f.versions)}
                new = used - st.versions
                if new:
                    st.versions |= new
                    mark(st.fields, new)

    mark(top, set(range(valid[0], valid[1] + 1)))
    for f in top:
        check_names(msg.name, [f.attr for f in top])
    for st in structs.values():
        check_names(st.name, [f.attr for f in st.fields])
    return msg


def check_names(owner: str, attrs: list[str]) -> None:
    if len(set(attrs)) != len(attrs):
        raise SystemExit(f"{owner}: duplicate snake_case field names {attrs}")



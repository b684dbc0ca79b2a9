"""The generated classes match the vendored JSON specs, and the generator's output is what is on disk."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pykafka_client.protocol import api_keys
from pykafka_client.protocol.messages import MESSAGE_CLASSES
from pykafka_client.protocol.types import ZERO_UUID, Message

from .strategies import struct_class

ROOT = Path(__file__).resolve().parents[3]
SPECS = ROOT / "pykafka_client" / "protocol" / "specs"
UPSTREAM = Path("/work/shared/kafka-spec/messages")
#: specs vendored at a newer Kafka than the upstream snapshot: the share group APIs at their first stable version
#: (v1, Kafka 4.1), the only one librdkafka's share consumer speaks
AHEAD_OF_UPSTREAM = {f"Share{api}{kind}.json" for api in ("GroupHeartbeat", "GroupDescribe", "Fetch", "Acknowledge")
                     for kind in ("Request", "Response")} | {
    # v1 (Kafka 4.2, KIP-1226): the leader epoch and delivery-complete count the group coordinator's
    # DescribeShareGroupOffsets measures the lag with
    f"ReadShareGroupStateSummary{kind}.json" for kind in ("Request", "Response")}
#: specs the upstream snapshot does not have at all: the share-group offsets admin APIs (keys 90-92), stable since
#: Kafka 4.1 (v0); DescribeShareGroupOffsets v1 (Kafka 4.2, KIP-1226) adds the lag
NOT_UPSTREAM = {f"{api}ShareGroupOffsets{kind}.json" for api in ("Describe", "Alter", "Delete")
                for kind in ("Request", "Response")}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_protocol", ROOT / "tools" / "generate_protocol.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["generate_protocol"] = mod
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def _strip(text: str) -> str:
    """Independent // comment stripper (line based, string aware) for cross-checking the generator's."""
    out = []
    for line in text.splitlines():
        in_str = False
        cut = len(line)
        i = 0
        while i < len(line):
            c = line[i]
            if in_str and c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = not in_str
            elif not in_str and line.startswith("//", i):
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def _load(p: Path) -> dict[str, Any]:
    d: dict[str, Any] = json.loads(_strip(p.read_text(encoding="utf-8")))
    return d


SPEC_FILES = sorted(SPECS.glob("*.json"))


def _vr(s: str | None) -> tuple[int, int] | None:
    if s is None or s == "none":
        return None
    if s.endswith("+"):
        return (int(s[:-1]), 0x7FFF)
    lo, _, hi = s.partition("-")
    return (int(lo), int(hi or lo))


def test_vendored_specs_are_complete() -> None:
    assert len(SPEC_FILES) >= 186
    assert (SPECS / "LICENSE").is_file()
    assert (SPECS / "NOTICE").is_file()
    assert "Apache License" in (SPECS / "LICENSE").read_text(encoding="utf-8")


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="upstream spec checkout not present")
def test_vendored_specs_equal_upstream() -> None:
    upstream = {p.name: p.read_bytes() for p in UPSTREAM.glob("*.json")}
    ours = {p.name: p.read_bytes() for p in SPEC_FILES}
    assert set(ours) - set(upstream) == NOT_UPSTREAM
    assert set(upstream) <= set(ours)
    differing = {name for name in upstream if ours[name] != upstream[name]}
    assert differing == AHEAD_OF_UPSTREAM


def test_generator_output_matches_disk() -> None:
    assert GEN.main(["--check"]) == 0


def test_comment_stripping_keeps_slashes_inside_strings() -> None:
    text = '{"a": "http://x // y", // comment\n "b": "q\\"//"} // end'
    assert json.loads(GEN.strip_comments(text)) == {"a": "http://x // y", "b": 'q"//'}
    assert json.loads(_strip(text)) == {"a": "http://x // y", "b": 'q"//'}


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return s + "_" if s in ("from", "global", "class", "is", "in") else s


def _expected_default(f: dict[str, Any]) -> Any:
    t = f["type"]
    d = f.get("default")
    if t.startswith("[]"):
        return None if d == "null" else []
    if t[:1].isupper():
        return None if d == "null" else "struct"
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if d in (None, ""):
            return 0
        d = str(d).strip()
        neg = d.startswith("-")
        body = d.lstrip("-")
        v = int(body, 16) if body.lower().startswith("0x") else int(body)
        return -v if neg else v
    if t == "bool":
        return str(d).lower() == "true" if d is not None else False
    if t == "float64":
        return float(d) if d else 0.0
    if t == "string":
        return None if d == "null" else (d or "")
    if t == "bytes":
        return None if d == "null" else b""
    if t == "uuid":
        return ZERO_UUID
    if t == "records":
        return None
    raise AssertionError(t)


def _check_struct(owner: type[Message], cls: type[Message], fields: list[dict[str, Any]], where: str) -> int:
    schema = cls._SCHEMA
    assert [s.json_name for s in schema] == [f["name"] for f in fields], where
    inst = cls()
    checked = 0
    for s, f in zip(schema, fields, strict=True):
        w = f"{where}.{f['name']}"
        assert s.name == _snake(f["name"]), w
        assert s.type == f["type"], w
        assert s.versions == _vr(f.get("versions")), w
        assert s.nullable_versions == _vr(f.get("nullableVersions")), w
        assert s.tag == (None if f.get("tag") is None else int(f["tag"])), w
        assert s.tagged_versions == _vr(f.get("taggedVersions")), w
        raw = f.get("default")
        assert s.default == (raw if raw is None or isinstance(raw, str) else json.dumps(raw)), w
        assert s.ignorable == bool(f.get("ignorable", False)), w
        assert s.entity_type == f.get("entityType"), w
        assert s.map_key == bool(f.get("mapKey", False)), w
        assert s.zero_copy == bool(f.get("zeroCopy", False)), w
        assert s.flexible_versions == ("inherit" if "flexibleVersions" not in f else _vr(f["flexibleVersions"])), w
        value = getattr(inst, s.name)
        expected = _expected_default(f)
        if expected == "struct":
            sub = struct_class(owner, f["type"])
            assert isinstance(value, sub), w
        else:
            assert value == expected and type(value) is type(expected), w
        elem = f["type"].removeprefix("[]")
        if elem[:1].isupper():
            sub = struct_class(owner, elem)
            assert getattr(owner, elem) is sub, w
            sub_fields = f.get("fields")
            if sub_fields is not None:
                checked += _check_struct(owner, sub, sub_fields, f"{where}.{elem}")
        checked += 1
    return checked


@pytest.mark.parametrize("path", SPEC_FILES, ids=[p.stem for p in SPEC_FILES])
def test_class_matches_spec(path: Path) -> None:
    spec = _load(path)
    cls = MESSAGE_CLASSES[spec["name"]]
    assert cls.__name__ == spec["name"]
    assert cls.API_KEY == spec.get("apiKey")
    assert cls.MESSAGE_TYPE == spec["type"]
    assert cls.VALID_VERSIONS == _vr(spec["validVersions"])
    flex = _vr(spec["flexibleVersions"])
    assert cls.FLEXIBLE_VERSIONS_MIN == (None if flex is None else flex[0])
    for common in spec.get("commonStructs", []):
        sub = getattr(cls, common["name"])
        _check_struct(cls, sub, common["fields"], f"{spec['name']}.{common['name']}")
    _check_struct(cls, cls, spec["fields"], spec["name"])


def test_every_spec_has_a_class_and_nothing_else() -> None:
    names = {_load(p)["name"] for p in SPEC_FILES}
    assert names == set(MESSAGE_CLASSES)


def test_api_keys_cover_every_request_spec() -> None:
    requests = {}
    responses = {}
    for p in SPEC_FILES:
        d = _load(p)
        if d["type"] == "request":
            requests[d["apiKey"]] = d
        elif d["type"] == "response":
            responses[d["apiKey"]] = d
    assert set(requests) == set(responses) == {int(k) for k in api_keys.ApiKey}
    for key, d in requests.items():
        ak = api_keys.ApiKey(key)
        assert api_keys.REQUESTS[ak].__name__ == d["name"]
        assert api_keys.RESPONSES[ak].__name__ == responses[key]["name"]
        assert api_keys.CLIENT_SUPPORTED_VERSIONS[ak] == _vr(d["validVersions"])
        assert api_keys.api_name(key) == d["name"].removesuffix("Request")
    keys = api_keys.ApiKey
    assert (int(keys.PRODUCE), int(keys.FETCH), int(keys.LIST_OFFSETS)) == (0, 1, 2)
    assert (int(keys.API_VERSIONS), int(keys.OFFSET_FOR_LEADER_EPOCH)) == (18, 23)
    assert api_keys.api_name(12345) == "Unknown(12345)"
    for ak, (lo, hi) in api_keys.STABLE_VERSIONS.items():
        spec_lo, spec_hi = api_keys.CLIENT_SUPPORTED_VERSIONS[ak]
        assert spec_lo == lo and hi in (spec_hi, spec_hi - 1)


def test_generator_is_deterministic() -> None:
    first = GEN.generate_all(SPECS)
    second = GEN.generate_all(SPECS)
    assert first == second
    assert len([p for p in first if p.name != "__init__.py" and p.parent.name == "messages"]) == len(SPEC_FILES)


def test_message_modules_load_lazily() -> None:
    import subprocess

    code = (
        "import sys, pykafka_client.protocol as p\n"
        "from pykafka_client.protocol.messages import FetchRequest\n"
        "p.REQUESTS[p.ApiKey.METADATA]\n"
        "mods = sorted(m for m in sys.modules if m.startswith('pykafka_client.protocol.messages.'))\n"
        "print(','.join(m.rsplit('.', 1)[1] for m in mods))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip().split(",") == ["fetch_request", "metadata_request", "request_header", "response_header"]

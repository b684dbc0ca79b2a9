"""Code generation for one message spec: the slotted dataclass with straight-line ``write``/``read`` per
range of versions (part of ``tools/generate_protocol.py``)."""

from __future__ import annotations

from typing import Any

from protocol_spec import FIXED, PY_TYPES, FieldDef, MessageDef, in_range, parse_int

# --- code generation -------------------------------------------------------------------------------


class Gen:
    """Generates one module."""

    def __init__(self, msg: MessageDef) -> None:
        self.msg = msg
        self.structs_fmt: dict[str, str] = {}  # format -> name
        self.uses_uuid = False

    # names ------------------------------------------------------------------------------------
    def qual(self, sname: str) -> str:
        return f"{self.msg.name}.{sname}"

    def alias(self, sname: str) -> str:
        return f"_T_{sname}"

    def sfmt(self, fmt: str) -> str:
        name = self.structs_fmt.get(fmt)
        if name is None:
            name = "_S_" + fmt.replace("?", "o")
            self.structs_fmt[fmt] = name
        return name

    # types -------------------------------------------------------------------------------------
    def py_type(self, f: FieldDef) -> str:
        if f.is_struct:
            base = self.qual(f.elem)
        else:
            base = PY_TYPES[f.elem]
            if f.elem == "uuid":
                self.uses_uuid = True
        t = f"list[{base}]" if f.is_array else base
        if f.optional:
            t += " | None"
        return t

    def default_value_expr(self, f: FieldDef) -> str:
        """Expression for the default (evaluated at read time / in comparisons)."""
        d = f.default
        if f.is_array:
            return "None" if d == "null" else "[]"
        if f.is_struct:
            return "None" if d == "null" else f"{self.alias(f.elem)}()"
        t = f.type
        if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            return str(parse_int(d)) if d not in (None, "") else "0"
        if t == "bool":
            return "True" if (d or "").strip().lower() == "true" else "False"
        if t == "float64":
            return repr(float(d)) if d not in (None, "") else "0.0"
        if t == "string":
            if d == "null":
                return "None"
            return repr(d or "")
        if t == "bytes":
            return "None" if d == "null" else 'b""'
        if t == "uuid":
            return "ZERO_UUID"
        if t == "records":
            return "None"
        raise SystemExit(f"no default for type {t}")

    def field_decl(self, f: FieldDef) -> str:
        t = self.py_type(f)
        d = f.default
        if f.is_array:
            init = "None" if d == "null" else "field(default_factory=list)"
        elif f.is_struct:
            init = "None" if d == "null" else f"field(default_factory=lambda: {self.qual(f.elem)}())"
        else:
            init = self.default_value_expr(f)
        return f"{f.attr}: {t} = {init}"

    def is_flex_field(self, f: FieldDef, flex: bool) -> bool:
        if f.flex_override == "inherit":
            return flex
        return False if f.flex_override is None else flex

    # sizes -------------------------------------------------------------------------------------
    def min_size(self, f: FieldDef, v: int, flex: bool) -> int:
        """Fewest bytes field ``f`` takes at version v (regular, non-tagged)."""
        fx = self.is_flex_field(f, flex)
        if f.is_array:
            return 1 if fx else 4
        if f.is_struct:
            if in_range(v, f.nullable):
                return 1
            return self.struct_min_size(f.elem, v, flex)
        if f.type in FIXED:
            return FIXED[f.type][1]
        if f.type == "string":
            return 1 if fx else 2
        return 1 if fx else 4  # bytes / records

    def elem_min_size(self, f: FieldDef, v: int, flex: bool) -> int:
        fx = self.is_flex_field(f, flex)
        e = f.elem
        if f.is_struct:
            return self.struct_min_size(e, v, flex)
        if e in FIXED:
            return FIXED[e][1]
        if e == "string":
            return 1 if fx else 2
        return 1 if fx else 4

    def struct_min_size(self, sname: str, v: int, flex: bool) -> int:
        st = self.msg.structs[sname]
        n = 1 if flex else 0
        for f in st.fields:
            if in_range(v, f.versions) and not in_range(v, f.tagged):
                n += self.min_size(f, v, flex)
        return n

    # write ---------------------------------------------------------------------------------------
    def write_field(self, f: FieldDef, v: int, flex: bool, w: str, val: str, owner: str) -> list[str]:
        """Lines writing value expression ``val`` of (non-fixed or fixed) field f to writer ``w``."""
        fx = self.is_flex_field(f, flex)
        nullable = in_range(v, f.nullable)
        out: list[str] = []
        if f.optional and not nullable:
            out += [
                f"if {val} is None:",
                f'    raise IllegalArgumentError(f"null value for non-nullable field {owner}.{f.name} at version {{version}}")',
            ]
        if f.is_array:
            if nullable:
                null = f"{w}.buf.append(0)" if fx else f'{w}.buf += b"\\xff\\xff\\xff\\xff"'
                out += [f"if {val} is None:", f"    {null}", "else:"]
                ind = "    "
            else:
                ind = ""
            lenf = "write_compact_array_length" if fx else "write_array_length"
            ev = f"_e_{f.attr}"
            out.append(f"{ind}{w}.{lenf}(len({val}))")
            e = f.elem
            if f.is_struct:
                out += [f"{ind}for {ev} in {val}:", f"{ind}    {ev}.write({w}, version)"]
            elif e == "uuid":
                out += [f"{ind}for {ev} in {val}:", f"{ind}    {w}.buf += {ev}.bytes"]
            elif e in FIXED:
                out.append(f"{ind}{w}.write_fixed_array({FIXED[e][0]!r}, {val})")
            elif e == "string":
                m = "write_compact_string" if fx else "write_string"
                out += [f"{ind}for {ev} in {val}:", f"{ind}    {w}.{m}({ev})"]
            else:
                raise SystemExit(f"unsupported array element {e}")
            return out
        if f.is_struct:
            if nullable:
                out += [
                    f"if {val} is None:",
                    f'    {w}.buf += b"\\xff"',
                    "else:",
                    f'    {w}.buf += b"\\x01"',
                    f"    {val}.write({w}, version)",
                ]
            else:
                out.append(f"{val}.write({w}, version)")
            return out
        t = f.type
        if t in FIXED:
            code = FIXED[t][0]
            ex = f"{val}.bytes" if t == "uuid" else val
            out.append(f"{w}.buf += {self.sfmt(code)}.pack({ex})")
            return out
        if t == "string":
            m = ("write_compact_" if fx else "write_") + ("nullable_string" if nullable else "string")
            out.append(f"{w}.{m}({val})")
            return out
        if t == "bytes":
            m = ("write_compact_" if fx else "write_") + ("nullable_bytes" if nullable else "bytes")
            out.append(f"{w}.{m}({val})")
            return out
        if t == "records":
            out.append(f"{w}.write_records_field({val}, {fx})")
            return out
        raise SystemExit(f"unsupported type {t}")

    def write_body(self, fields: list[FieldDef], v: int, owner: str, has_unknown: bool) -> list[str]:
        flex = self.msg.flex_min is not None and v >= self.msg.flex_min
        out: list[str] = []
        run: list[tuple[str, str]] = []  # (code, expr)

        def flush() -> None:
            if run:
                fmt = ">" + "".join(c for c, _ in run)
                out.append(f"w.buf += {self.sfmt(fmt[1:])}.pack({', '.join(e for _, e in run)})")
                run.clear()

        tagged: list[FieldDef] = []
        for f in fields:
            present = in_range(v, f.versions)
            if not present:
                if not f.ignorable:
                    flush()
                    out += [
                        f"if self.{f.attr} != {self.default_value_expr(f)}:",
                        f'    raise UnsupportedVersionError(f"attempted to write a non-default {f.name} at version {{version}} of {owner}")',
                    ]
                continue
            if in_range(v, f.tagged):
                if not flex:
                    raise SystemExit(f"{owner}.{f.name}: tagged in non-flexible version {v}")
                tagged.append(f)
                continue
            if f.type in FIXED:
                code = FIXED[f.type][0]
                run.append((code, f"self.{f.attr}.bytes" if f.type == "uuid" else f"self.{f.attr}"))
                continue
            flush()
            out += self.write_field(f, v, flex, "w", f"self.{f.attr}", owner)
        flush()
        if flex:
            if tagged:
                out.append("_tags = []")
                for f in sorted(tagged, key=lambda x: x.tag or 0):
                    out.append(f"if self.{f.attr} != {self.default_value_expr(f)}:")
                    out.append("    _tw = Writer()")
                    out += ["    " + ln for ln in self.write_field(f, v, True, "_tw", f"self.{f.attr}", owner)]
                    out.append(f"    _tags.append(({f.tag}, _tw.to_bytes()))")
                out += [
                    "if self.unknown_tagged_fields:",
                    "    _tags.extend(self.unknown_tagged_fields)",
                    "    _tags.sort(key=_tag_key)",
                    "w.write_tags(_tags)",
                ]
            else:
                out.append("w.write_tags(self.unknown_tagged_fields)")
        elif has_unknown:
            out += [
                "if self.unknown_tagged_fields:",
                f'    raise UnsupportedVersionError(f"tagged fields were set, but version {{version}} of {owner} does not support them")',
            ]
        return out

    # read ---------------------------------------------------------------------------------------
    def read_field(self, f: FieldDef, v: int, flex: bool, var: str) -> list[str]:
        fx = self.is_flex_field(f, flex)
        nullable = in_range(v, f.nullable)
        if f.is_array:
            lenf = "read_compact_array_length" if fx else "read_array_length"
            ms = self.elem_min_size(f, v, flex)
            if ms < 1:
                raise SystemExit(f"{f.name}: zero-size array element at v{v}")
            e = f.elem
            if f.is_struct:
                body = f"[{self.alias(e)}.read(r, version) for _ in range(_n)]"
            elif e == "uuid":
                body = "r.read_uuid_array(_n)"
            elif e in FIXED:
                m = "read_nullable_fixed_array_field" if nullable else "read_fixed_array_field"
                return [f"{var} = r.{m}({FIXED[e][0]!r}, {FIXED[e][1]}, {fx})"]
            elif e == "string":
                m = "read_compact_string" if fx else "read_string"
                body = f"[r.{m}() for _ in range(_n)]"
            else:
                raise SystemExit(f"unsupported array element {e}")
            if nullable:
                return [f"_n = r.{lenf}({ms}, True)", f"{var} = None if _n < 0 else {body}"]
            return [f"_n = r.{lenf}({ms})", f"{var} = {body}"]
        if f.is_struct:
            if nullable:
                return [f"{var} = None if r.read_int8() < 0 else {self.alias(f.elem)}.read(r, version)"]
            return [f"{var} = {self.alias(f.elem)}.read(r, version)"]
        t = f.type
        if t in FIXED:
            m = {"int8": "read_int8", "int16": "read_int16", "uint16": "read_uint16", "int32": "read_int32",
                 "uint32": "read_uint32", "int64": "read_int64", "float64": "read_float64", "bool": "read_bool",
                 "uuid": "read_uuid"}[t]
            return [f"{var} = r.{m}()"]
        if t == "string":
            m = ("read_compact_" if fx else "read_") + ("nullable_string" if nullable else "string")
            return [f"{var} = r.{m}()"]
        if t == "bytes":
            m = ("read_compact_" if fx else "read_") + ("nullable_bytes" if nullable else "bytes")
            return [f"{var} = r.{m}()"]
        if t == "records":
            if nullable:
                return [f"{var} = r.read_records({fx}, True)"]
            return [f"{var} = r.read_records({fx}, False)"]
        raise SystemExit(f"unsupported type {t}")

    def read_body(self, fields: list[FieldDef], v: int, has_unknown: bool) -> list[str]:
        flex = self.msg.flex_min is not None and v >= self.msg.flex_min
        out: list[str] = []
        run: list[tuple[str, FieldDef]] = []
        args: list[str] = []

        def flush() -> None:
            if not run:
                return
            fmt = "".join(c for c, _ in run)
            names = [f"_u_{f.attr}" if f.type == "uuid" and len(run) > 1 else f"f_{f.attr}" for _, f in run]
            what = "fields " + ", ".join(f.name for _, f in run)
            if len(run) == 1:
                out.extend(self.read_field(run[0][1], v, flex, names[0]))
            else:
                out.append(f"{', '.join(names)} = r.unpack({self.sfmt(fmt)}, {what!r})")
                for _, f in run:
                    if f.type == "uuid":
                        out.append(f"f_{f.attr} = uuid.UUID(bytes=_u_{f.attr})")
            run.clear()

        tagged: list[FieldDef] = []
        for f in fields:
            if not in_range(v, f.versions):
                args.append(self.default_value_expr(f))
                continue
            args.append(f"f_{f.attr}")
            if in_range(v, f.tagged):
                tagged.append(f)
                continue
            if f.type in FIXED:
                run.append((FIXED[f.type][0], f))
                continue
            flush()
            out += self.read_field(f, v, flex, f"f_{f.attr}")
        flush()
        if flex:
            if tagged:
                for f in tagged:
                    out.append(f"f_{f.attr} = {self.default_value_expr(f)}")
                out += [
                    "_unknown = None",
                    "for _ in range(r.read_tag_count()):",
                    "    _tag, _size = r.read_tag_header()",
                    "    _start = r.pos",
                ]
                kw = "if"
                for f in sorted(tagged, key=lambda x: x.tag or 0):
                    out.append(f"    {kw} _tag == {f.tag}:")
                    out += ["        " + ln for ln in self.read_field(f, v, True, f"f_{f.attr}")]
                    out.append(f"        r.check_tag_end({f.tag}, _start, _size)")
                    kw = "elif"
                out += [
                    "    else:",
                    "        if _unknown is None:",
                    "            _unknown = []",
                    "        _unknown.append((_tag, bytes(r.read_raw(_size))))",
                ]
            else:
                out.append("_unknown = r.read_unknown_tags()")
            args.append("_unknown")
        elif has_unknown:
            args.append("None")
        out.append(f"return cls({', '.join(args)})")
        return out

    # dispatch -------------------------------------------------------------------------------------
    def dispatch(self, versions: list[int], body_for: Any, indent: str, raiser: str) -> list[str]:
        bodies: list[tuple[int, int, list[str]]] = []
        for v in versions:
            b = body_for(v)
            if bodies and bodies[-1][2] == b and bodies[-1][1] == v - 1:
                bodies[-1] = (bodies[-1][0], v, b)
            else:
                bodies.append((v, v, b))
        out: list[str] = []
        kw = "if"
        for lo, hi, b in reversed(bodies):  # newest versions first: they are the common case
            cond = f"version == {lo}" if lo == hi else f"{lo} <= version <= {hi}"
            out.append(f"{indent}{kw} {cond}:")
            out += [f"{indent}    {ln}" if ln else "" for ln in (b or ["pass"])]
            kw = "elif"
        if bodies:
            out.append(f"{indent}else:")
            out.append(f"{indent}    raise {raiser}.unsupported_version(version)")
        else:
            out.append(f"{indent}raise {raiser}.unsupported_version(version)")
        return out

    def class_code(self, name: str, fields: list[FieldDef], versions: set[int], indent: str, top: bool,
                   nested: list[str]) -> list[str]:
        msg = self.msg
        has_unknown = msg.flex_min is not None and any(v >= msg.flex_min for v in versions)
        vs = sorted(versions)
        out = [f"{indent}@dataclass(slots=True)", f"{indent}class {name}(Message):"]
        i2 = indent + "    "
        if top:
            doc = f"{msg.name} ({msg.type}, {msg.file})"
        else:
            doc = f"{msg.name}.{name} (struct)"
        out.append(f'{i2}"""{doc}."""')
        out.append("")
        out += nested
        if top:
            out.append(f"{i2}API_KEY = {msg.api_key!r}")
            out.append(f"{i2}MESSAGE_TYPE = {msg.type!r}")
        lo, hi = (vs[0], vs[-1]) if vs else msg.valid
        out.append(f"{i2}VALID_VERSIONS = ({lo}, {hi})")
        out.append(f"{i2}FLEXIBLE_VERSIONS_MIN = {msg.flex_min!r}")
        out.append(f"{i2}_SCHEMA = (")
        for f in fields:
            out.append(f"{i2}    FieldSchema({self.schema_args(f)}),")
        out.append(f"{i2})")
        out.append("")
        for f in fields:
            about = f.about.replace("\n", " ").strip()
            line = f"{i2}{self.field_decl(f)}"
            out.append(line)
            if about:
                out.append(f"{i2}# {about}" if len(about) < 200 else f"{i2}# {about[:197]}...")
        if has_unknown:
            out.append(f"{i2}unknown_tagged_fields: list[tuple[int, bytes]] | None = field(default=None, compare=False, repr=False)")
        out.append("")
        qual = self.qual(name) if not top else name
        out.append(f"{i2}def write(self, w: Writer, version: int) -> None:")
        if any(f.tag is not None for f in fields):
            out.append(f"{i2}    _tags: list[tuple[int, bytes]]")
        out += self.dispatch(vs, lambda v: self.write_body(fields, v, qual, has_unknown), i2 + "    ", "self")
        out.append("")
        out.append(f"{i2}@classmethod")
        out.append(f"{i2}def read(cls, r: Reader, version: int) -> Self:")
        for f in fields:
            if any(in_range(v, f.versions) for v in vs):
                out.append(f"{i2}    f_{f.attr}: {self.py_type(f)}")
        if has_unknown:
            out.append(f"{i2}    _unknown: list[tuple[int, bytes]] | None")
        out += self.dispatch(vs, lambda v: self.read_body(fields, v, has_unknown), i2 + "    ", "cls")
        out.append("")
        return out

    def schema_args(self, f: FieldDef) -> str:
        flex = "inherit" if f.flex_override == "inherit" else f.flex_override
        return ", ".join(
            repr(x)
            for x in (
                f.attr, f.name, f.type, f.versions, f.nullable, f.tag, f.tagged, f.default, f.ignorable, flex,
                f.entity_type, f.map_key, f.zero_copy,
            )
        )

    def struct_order(self) -> list[str]:
        order: list[str] = []
        seen: set[str] = set()

        def visit(fields: list[FieldDef]) -> None:
            for f in fields:
                if f.is_struct and f.elem not in seen:
                    seen.add(f.elem)
                    visit(self.msg.structs[f.elem].fields)
                    order.append(f.elem)

        visit(self.msg.fields)
        return order

    def module(self) -> str:
        msg = self.msg
        nested: list[str] = []
        order = self.struct_order()
        for sname in order:
            st = msg.structs[sname]
            nested += self.class_code(sname, st.fields, st.versions, "    ", False, [])
        top = self.class_code(msg.name, msg.fields, set(range(msg.valid[0], msg.valid[1] + 1)), "", True, nested)
        head = [
            f"# Generated by tools/generate_protocol.py from protocol/specs/{msg.file}. DO NOT EDIT.",
            "# The message definition is Apache Kafka's (Apache-2.0); see protocol/specs/LICENSE and NOTICE.",
            f'"""{msg.name}: generated codec (see docs/ARCHITECTURE.md, "Protocol messages")."""',
            "",
            "from __future__ import annotations",
            "",
            "import struct",
        ]
        if self.uses_uuid:
            head.append("import uuid")
        head += [
            "from dataclasses import dataclass, field",
            "",
            "from typing_extensions import Self",
            "",
            "from pykafka_client.errors import IllegalArgumentError, UnsupportedVersionError",
            "from pykafka_client.protocol.types import (",
            "    NO_TAGS,",
            "    ZERO_UUID,",
            "    FieldSchema,",
            "    Message,",
            "    Reader,",
            "    RecordsLike,",
            "    Writer,",
            ")",
            "",
            "__all__ = [" + repr(msg.name) + "]",
            "",
        ]
        for fmt, nm in sorted(self.structs_fmt.items(), key=lambda x: x[1]):
            head.append(f'{nm} = struct.Struct(">{fmt}")')
        head += [
            "",
            "",
            "def _tag_key(t: tuple[int, bytes]) -> int:",
            "    return t[0]",
            "",
            "",
        ]
        tail = [""]
        for sname in order:
            tail.append(f"{self.alias(sname)} = {self.qual(sname)}")
        text = "\n".join(head + top + tail).rstrip() + "\n"
        # silence unused-import issues for modules without uses
        return text

"""Configuration definitions shared by the producer, the consumer and the admin client.

Java: ``org.apache.kafka.common.config.ConfigDef`` / ``AbstractConfig``. A :class:`ConfigDef` lists
every key a client accepts (dotted Kafka name, type, default, validator, doc).
:meth:`ConfigDef.parse` turns a user mapping into a complete, typed dict:

* an unknown key, a value of the wrong type or a value the validator rejects raises
  :class:`~pykafka_client.errors.ConfigurationError` whose message names the key;
* strings are accepted where Java accepts them (``"true"``, ``"5"``, ``"a,b"``), so a
  ``.properties``-style dict works unchanged;
* a key with the default :data:`NO_DEFAULT` must be given;
* an unknown key's error suggests the closest known keys ("did you mean ...?").

:func:`merge_config` is the one place where the clients' keyword arguments (``bootstrap_servers=...``,
the dotted name with ``_`` for ``.``) become dotted keys merged over a config mapping.

:class:`AbstractConfig` keeps the parsed values and the user's originals, so post-processing can
tell "explicitly set" from "defaulted" (Java ``originals().containsKey``), which is what the
idempotence rules need.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykafka_client.errors import ConfigurationError


class ConfigType(enum.Enum):
    """The type a value is parsed into."""

    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"  # 32-bit signed, as in Java
    LONG = "long"  # 64-bit signed
    DOUBLE = "double"
    LIST = "list"  # list[str]; a string is split on commas
    CLASS = "class"  # any object (a class, an instance, a callable or a string name), not checked here
    PASSWORD = "password"  # a string that is never shown in messages


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: Marks a key that has no default and must be given.
NO_DEFAULT: Any = _NoDefault()

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

Validator = Callable[[str, Any], None]
#: Parses a key's raw value (already known to be non-None) into its typed form, replacing the
#: ConfigType's parsing for that key; raises ConfigurationError naming the key.
Parser = Callable[[str, Any], Any]


def at_least(minimum: float) -> Validator:
    """Validator: the value is ``>= minimum`` (``None`` passes, for nullable keys)."""

    def check(name: str, value: Any) -> None:
        if value is not None and value < minimum:
            raise ConfigurationError(f"Invalid value {value!r} for configuration {name}: must be at least {minimum}")

    return check


def between(minimum: float, maximum: float) -> Validator:
    """Validator: ``minimum <= value <= maximum``."""

    def check(name: str, value: Any) -> None:
        if value is not None and not (minimum <= value <= maximum):
            raise ConfigurationError(
                f"Invalid value {value!r} for configuration {name}: must be between {minimum} and {maximum}"
            )

    return check


def one_of(*allowed: str, case_insensitive: bool = True) -> Validator:
    """Validator: the (string) value is one of ``allowed``."""
    folded = {a.lower() for a in allowed} if case_insensitive else set(allowed)

    def check(name: str, value: Any) -> None:
        if value is None:
            return
        v = value.lower() if case_insensitive and isinstance(value, str) else value
        if v not in folded:
            raise ConfigurationError(
                f"Invalid value {value!r} for configuration {name}: must be one of {', '.join(allowed)}"
            )

    return check


def non_empty_list(name: str, value: Any) -> None:
    """Validator: the list has at least one non-empty element."""
    if not value or any(not v for v in value):
        raise ConfigurationError(f"Invalid value {value!r} for configuration {name}: must be a non-empty list")


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key."""

    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    doc: str
    nullable: bool = False
    parser: Parser | None = None

    def parse(self, value: Any) -> Any:
        return self.parser(self.name, value) if self.parser is not None else parse_typed(self.name, self.type, value)

    @property
    def sensitive(self) -> bool:
        """True for a password: its value is never shown (in messages, reprs or DescribeConfigs)."""
        return self.type is ConfigType.PASSWORD


class ConfigDef:
    """The set of keys a client accepts. Build with chained :meth:`define` calls."""

    def __init__(self) -> None:
        self._keys: dict[str, ConfigKey] = {}

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        doc: str = "",
        nullable: bool = False,
        parser: Parser | None = None,
    ) -> ConfigDef:
        """Add a key. ``parser`` replaces the type's parsing for this key (e.g. ``acks``: 0, 1, -1 or
        ``"all"`` to an int)."""
        if name in self._keys:
            raise ValueError(f"configuration {name} is defined twice")
        key = ConfigKey(name, type, default, validator, doc, nullable or default is None, parser)
        if default is not NO_DEFAULT and default is not None:
            default = key.parse(default)
            if validator is not None:
                validator(name, default)
            key = ConfigKey(name, type, default, validator, doc, key.nullable, parser)
        self._keys[name] = key
        return self

    def keys(self) -> Mapping[str, ConfigKey]:
        return self._keys

    def names(self) -> Iterable[str]:
        return self._keys.keys()

    def suggestions(self, name: str, *, keyword: bool = False) -> list[str]:
        """The known keys closest to ``name`` (compared with both the dotted and the snake_case form of
        every key), as dotted names, or as keyword names (``_`` for ``.``) when ``keyword``."""
        forms: dict[str, str] = {}
        for key in self._keys:
            forms[key] = key
            forms[key.replace(".", "_")] = key
        close = difflib.get_close_matches(name.strip().lower(), list(forms), n=6, cutoff=0.6)
        found = list(dict.fromkeys(forms[c] for c in close))[:3]
        return [k.replace(".", "_") for k in found] if keyword else found

    def unknown_key_error(self, name: object, *, keyword: bool = False) -> ConfigurationError:
        """ConfigurationError for an unknown key (or keyword argument), with a did-you-mean suggestion
        when a known key is close."""
        close = self.suggestions(name, keyword=keyword) if isinstance(name, str) else []
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        kind = "configuration keyword argument" if keyword else "configuration"
        return ConfigurationError(f"Unknown {kind} {name!r}{hint}")

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Validate ``props`` and return every key's value (defaults filled in)."""
        unknown = [k for k in props if k not in self._keys]
        if unknown:
            error = self.unknown_key_error(unknown[0])
            if unknown[1:]:
                error = ConfigurationError(f"{error} (also unknown: {', '.join(map(repr, unknown[1:]))})")
            raise error
        values: dict[str, Any] = {}
        for name, key in self._keys.items():
            if name in props:
                raw = props[name]
                if raw is None:
                    if not key.nullable:
                        raise ConfigurationError(f"Invalid value None for configuration {name}: must not be null")
                    value = None
                else:
                    value = key.parse(raw)
            elif key.default is NO_DEFAULT:
                raise ConfigurationError(f"Missing required configuration {name!r} which has no default value")
            else:
                value = key.default
            if key.validator is not None and value is not None:
                key.validator(name, value)
            values[name] = value
        return values


def _label(name: str, label: str | None) -> str:
    return label if label is not None else f"configuration {name}"


def parse_bool(name: str, value: Any, *, label: str | None = None) -> bool:
    """The one boolean parser of the client, the broker and the Spark connector: ``True`` / ``False`` or the
    strings ``true`` / ``false`` (any case, surrounding spaces ignored); anything else raises
    :class:`ConfigurationError`. ``label`` names the setting in the message (default ``configuration
    <name>``; the Spark connector says ``option '<name>'``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigurationError(f"Invalid value {value!r} for {_label(name, label)}: must be true or false")


def parse_typed(name: str, type: ConfigType, value: Any, *, label: str | None = None) -> Any:
    """Parse ``value`` (not None) as ``type``; raises :class:`ConfigurationError` naming the setting (see
    :func:`parse_bool` for ``label``). Strings are accepted where Java accepts them (``"5"``, ``"a,b"``)."""

    def bad(expected: str) -> ConfigurationError:
        shown = "[hidden]" if type is ConfigType.PASSWORD else repr(value)
        return ConfigurationError(f"Invalid value {shown} for {_label(name, label)}: expected {expected}")

    if type is ConfigType.BOOLEAN:
        return parse_bool(name, value, label=label)
    if type in (ConfigType.INT, ConfigType.LONG):
        lo, hi = (INT_MIN, INT_MAX) if type is ConfigType.INT else (LONG_MIN, LONG_MAX)
        if isinstance(value, bool):
            raise bad("an integer")
        if isinstance(value, int):
            result = value
        elif isinstance(value, str):
            try:
                result = int(value.strip())
            except ValueError:
                raise bad("an integer") from None
        elif isinstance(value, float) and value.is_integer():
            result = int(value)
        else:
            raise bad("an integer")
        if not lo <= result <= hi:
            raise bad(f"an integer in [{lo}, {hi}]")
        return result
    if type is ConfigType.DOUBLE:
        if isinstance(value, bool):
            raise bad("a number")
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise bad("a number") from None
        raise bad("a number")
    if type in (ConfigType.STRING, ConfigType.PASSWORD):
        if isinstance(value, str):
            return value
        raise bad("a string")
    if type is ConfigType.LIST:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()] if value.strip() else []
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return [v.strip() for v in value]
        raise bad("a list of strings or a comma-separated string")
    return value  # CLASS: resolved by the user of the key


def merge_config(definition: ConfigDef, config: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """One mapping of dotted keys from a client's ``config`` mapping and its keyword arguments.

    A keyword argument is a dotted key with ``_`` for ``.`` (``bootstrap_servers`` ->
    ``bootstrap.servers``) and wins over the same key in ``config``. An unknown keyword raises
    ConfigurationError with the closest known keywords; so does a non-string key in ``config``.
    """
    if config is not None and not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping of configuration names to values, got {type(config).__name__}")
    merged: dict[str, Any] = {}
    for key, value in (config or {}).items():
        if not isinstance(key, str):
            raise ConfigurationError(f"configuration keys must be strings, got {key!r}")
        merged[key] = value
    by_keyword = {name.replace(".", "_"): name for name in definition.names()}
    for keyword, value in kwargs.items():
        name = by_keyword.get(keyword)
        if name is None:
            raise definition.unknown_key_error(keyword, keyword=True)
        merged[name] = value
    return merged


class AbstractConfig:
    """Parsed values plus the user's originals (to know what was set explicitly).

    ``originals`` is the user's mapping of dotted keys; ``overrides`` are keyword arguments
    (``bootstrap_servers=...``) merged over it by :func:`merge_config`.
    """

    def __init__(
        self, definition: ConfigDef, originals: Mapping[str, Any] | None, overrides: Mapping[str, Any] | None = None
    ) -> None:
        self.definition = definition
        self.originals: dict[str, Any] = merge_config(definition, originals, overrides or {})
        self.values: dict[str, Any] = definition.parse(self.originals)

    def get(self, name: str) -> Any:
        if name not in self.values:
            raise self.definition.unknown_key_error(name)
        return self.values[name]

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def was_set(self, name: str) -> bool:
        """True when the user gave ``name`` explicitly (even to its default value)."""
        return name in self.originals

    def __repr__(self) -> str:
        shown = {
            k: ("[hidden]" if self.definition.keys()[k].type is ConfigType.PASSWORD and v is not None else v)
            for k, v in sorted(self.values.items())
        }
        return f"{type(self).__name__}({shown})"

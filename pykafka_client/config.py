"""Configuration definitions shared by the producer, the consumer and the admin client.

Java: ``org.apache.kafka.common.config.ConfigDef`` / ``AbstractConfig``. A :class:`ConfigDef` lists
every key a client accepts (dotted Kafka name, type, default, validator, doc).
:meth:`ConfigDef.parse` turns a user mapping into a complete, typed dict:

* an unknown key, a value of the wrong type or a value the validator rejects raises
  :class:`~pykafka_client.errors.ConfigurationError` whose message names the key;
* strings are accepted where Java accepts them (``"true"``, ``"5"``, ``"a,b"``), so a
  ``.properties``-style dict works unchanged;
* a key with the default :data:`NO_DEFAULT` must be given.

:class:`AbstractConfig` keeps the parsed values and the user's originals, so post-processing can
tell "explicitly set" from "defaulted" (Java ``originals().containsKey``), which is what the
idempotence rules need.
"""

from __future__ import annotations

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
    ) -> ConfigDef:
        if name in self._keys:
            raise ValueError(f"configuration {name} is defined twice")
        if default is not NO_DEFAULT and default is not None:
            default = _parse_value(name, type, default)
            if validator is not None:
                validator(name, default)
        self._keys[name] = ConfigKey(name, type, default, validator, doc, nullable or default is None)
        return self

    def keys(self) -> Mapping[str, ConfigKey]:
        return self._keys

    def names(self) -> Iterable[str]:
        return self._keys.keys()

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Validate ``props`` and return every key's value (defaults filled in)."""
        unknown = [k for k in props if k not in self._keys]
        if unknown:
            raise ConfigurationError(f"Unknown configuration {unknown[0]!r}" + (f" (and {unknown[1:]})" if unknown[1:] else ""))
        values: dict[str, Any] = {}
        for name, key in self._keys.items():
            if name in props:
                raw = props[name]
                if raw is None:
                    if not key.nullable:
                        raise ConfigurationError(f"Invalid value None for configuration {name}: must not be null")
                    value = None
                else:
                    value = _parse_value(name, key.type, raw)
            elif key.default is NO_DEFAULT:
                raise ConfigurationError(f"Missing required configuration {name!r} which has no default value")
            else:
                value = key.default
            if key.validator is not None and value is not None:
                key.validator(name, value)
            values[name] = value
        return values


def _parse_value(name: str, type: ConfigType, value: Any) -> Any:
    def bad(expected: str) -> ConfigurationError:
        shown = "[hidden]" if type is ConfigType.PASSWORD else repr(value)
        return ConfigurationError(f"Invalid value {shown} for configuration {name}: expected {expected}")

    if type is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise bad("a boolean")
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


class AbstractConfig:
    """Parsed values plus the user's originals (to know what was set explicitly)."""

    def __init__(self, definition: ConfigDef, originals: Mapping[str, Any]) -> None:
        self.definition = definition
        self.originals: dict[str, Any] = dict(originals)
        self.values: dict[str, Any] = definition.parse(originals)

    def get(self, name: str) -> Any:
        if name not in self.values:
            raise ConfigurationError(f"Unknown configuration {name!r}")
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

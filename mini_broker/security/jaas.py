"""JAAS configuration text as Kafka reads it in ``sasl.jaas.config``:
``<LoginModule> <flag> key="value" ... ;``. PLAIN's users are the ``user_<name>="<password>"`` options of
``listener.name.<listener>.plain.sasl.jaas.config``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pykafka_client.errors import ConfigurationError

_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:(;)|([A-Za-z_$][\w.$]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))|([^\s=;"]+))')


@dataclass
class JaasLoginModule:
    """One login module entry: its class name, control flag and options."""

    name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def parse_jaas_config(text: str, key: str = "sasl.jaas.config") -> list[JaasLoginModule]:
    """The login modules of ``text``; raises ConfigurationError naming ``key`` when it does not parse."""
    modules: list[JaasLoginModule] = []
    current: JaasLoginModule | None = None
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ConfigurationError(f"{key}: cannot parse the JAAS configuration at character {pos}; expected "
                                     f'<LoginModule> required key="value" ... ;')
        pos = m.end()
        semicolon, opt, quoted, bare, word = m.groups()
        if semicolon:
            if current is None:
                raise ConfigurationError(f"{key}: ';' without a login module")
            modules.append(current)
            current = None
        elif word is not None:
            if current is None:
                current = JaasLoginModule(word, "")
            elif not current.flag:
                if word.lower() not in _FLAGS:
                    raise ConfigurationError(f"{key}: invalid control flag {word!r} for {current.name}; use one of "
                                             f"{', '.join(_FLAGS)}")
                current.flag = word.lower()
            else:
                raise ConfigurationError(f"{key}: unexpected {word!r} in the options of {current.name}")
        else:
            if current is None or not current.flag:
                raise ConfigurationError(f"{key}: option {opt!r} before the login module and its control flag")
            value = quoted if quoted is not None else bare
            current.options[opt] = re.sub(r"\\(.)", r"\1", value)
    if current is not None:
        raise ConfigurationError(f"{key}: the login module {current.name} is not terminated by ';'")
    if not modules:
        raise ConfigurationError(f"{key}: no login module")
    return modules


def plain_users(text: str, key: str = "sasl.jaas.config") -> dict[str, str]:
    """The ``user_<name>="<password>"`` options of the (first) login module: name -> password."""
    options = parse_jaas_config(text, key)[0].options
    return {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_") and len(k) > len("user_")}

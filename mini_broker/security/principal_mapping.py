"""``ssl.principal.mapping.rules``: maps a TLS client certificate's distinguished name to a principal name.

Rules are comma or newline separated, tried in order; the first that matches the whole DN gives the name.
``RULE:<regex>/<replacement>/[L|U]`` (``$1`` refers to a group; ``L``/``U`` lower/upper cases the result),
``DEFAULT`` keeps the DN as it is. A DN no rule matches has no principal: :class:`NoMatchingRuleError`, and the
broker closes the connection (Kafka's ``NoMatchingRule``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pykafka_client.errors import ConfigurationError

_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?))\s*(?:[,\n]|$)")


class NoMatchingRuleError(ValueError):
    """A TLS client's DN matches none of the ``ssl.principal.mapping.rules``."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str
    case: str

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        m = self.pattern.fullmatch(dn)
        if m is None:
            return None
        out = m.expand(self.replacement)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


class SslPrincipalMapper:
    """Compiled ``ssl.principal.mapping.rules``."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self._rules: list[_Rule] = []
        text = rules.strip()
        pos = 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ConfigurationError(f"ssl.principal.mapping.rules: invalid rule at {text[pos:]!r}; expected "
                                         "DEFAULT or RULE:pattern/replacement/[L|U]")
            pos = m.end()
            default, pattern, replacement, case = m.groups()
            if default:
                self._rules.append(_Rule(None, "", ""))
                continue
            try:
                compiled = re.compile(pattern.replace("\\/", "/"))
            except re.error as e:
                raise ConfigurationError(f"ssl.principal.mapping.rules: bad pattern {pattern!r}: {e}") from e
            repl = re.sub(r"\$(\d+)", r"\\g<\1>", replacement.replace("\\/", "/"))
            self._rules.append(_Rule(compiled, repl, case))
        if not self._rules:
            self._rules.append(_Rule(None, "", ""))

    def principal_name(self, dn: str) -> str:
        """The principal name of ``dn``; NoMatchingRuleError when no rule matches it."""
        for rule in self._rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRuleError(f"ssl.principal.mapping.rules: no rule matches the client certificate's DN {dn!r}; "
                                  "add a rule for it or end the rules with DEFAULT")

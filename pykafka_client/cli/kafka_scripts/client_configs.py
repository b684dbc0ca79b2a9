"""``kafka-configs.sh`` for users, clients and IPs: client quotas (``producer_byte_rate``, ``consumer_byte_rate``,
``request_percentage``, ``controller_mutation_rate``, ``connection_creation_rate``) through Alter/
DescribeClientQuotas and users' SCRAM credentials (``SCRAM-SHA-256=[iterations=8192,password=secret]``) through
Alter/DescribeUserScramCredentials, with the lines Kafka's ConfigCommand prints."""

from __future__ import annotations

import enum
from collections.abc import Mapping

from pykafka_client.admin.admin_client import AdminClient
from pykafka_client.admin.types import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilter,
    ClientQuotaFilterComponent,
    ScramMechanismType,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from pykafka_client.cli.common import CliError
from pykafka_client.errors import ResourceNotFoundError

#: --entity-type -> the quota entity type, and how Kafka's lines name it
ENTITY_TYPES = {"users": ClientQuotaEntity.USER, "clients": ClientQuotaEntity.CLIENT_ID, "ips": ClientQuotaEntity.IP}
_PRINTED = {ClientQuotaEntity.USER: "user-principal", ClientQuotaEntity.CLIENT_ID: "client-id",
            ClientQuotaEntity.IP: "ip"}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_ITERATIONS = 4096


class Every(enum.Enum):
    """An entity type named without a name on --describe: every entity of the type."""

    EVERY = "every"


#: entity type -> a name, None for the type's default, or Every.EVERY
Selection = dict[str, "str | Every | None"]


def java_double(value: float) -> str:
    """A quota as Java's ``Double.toString`` prints it: ``1024.0``, ``1.0E7``."""
    if value != 0 and not 1e-3 <= abs(value) < 1e7:
        mantissa, exponent = f"{value:.15E}".split("E")
        digits = mantissa.rstrip("0")
        return f"{digits}0E{int(exponent)}" if digits.endswith(".") else f"{digits}E{int(exponent)}"
    return repr(float(value))


def entity_text(entity: Mapping[str, str | None]) -> str:
    """``user-principal 'alice', client-id 'app'`` / ``the default client-id`` (Kafka's order: user, client, ip)."""
    parts = []
    for kind in (ClientQuotaEntity.USER, ClientQuotaEntity.CLIENT_ID, ClientQuotaEntity.IP):
        if kind in entity:
            name = entity[kind]
            parts.append(f"the default {_PRINTED[kind]}" if name is None else f"{_PRINTED[kind]} '{name}'")
    return ", ".join(parts)


def _scram_upsertion(user: str, mechanism: str, value: str) -> UserScramCredentialUpsertion:
    """``iterations=8192,password=secret`` (brackets already removed); iterations default to Kafka's 4096."""
    fields = {}
    for item in value.split(","):
        key, sep, v = item.partition("=")
        if not sep:
            raise CliError(f"Invalid {mechanism} value {value!r}: expected [iterations=N,password=SECRET]")
        fields[key.strip()] = v
    if "password" not in fields:
        raise CliError(f"Invalid {mechanism} value: a password is required ({mechanism}=[password=SECRET])")
    unknown = set(fields) - {"password", "iterations"}
    if unknown:
        raise CliError(f"Invalid {mechanism} value: unknown key(s) {', '.join(sorted(unknown))}; "
                       f"use iterations and password")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise CliError(f"Invalid {mechanism} iterations {fields['iterations']!r}: expected an integer") from None
    return UserScramCredentialUpsertion(user, mechanism, fields["password"], iterations=iterations)


def alter(admin: AdminClient, entity: dict[str, str | None], add: dict[str, str], delete: list[str],
          timeout: float) -> None:
    """Quota keys go to AlterClientQuotas, SCRAM mechanisms (users only, a named user) to
    AlterUserScramCredentials."""
    scram_add = {k: v for k, v in add.items() if k.upper() in SCRAM_MECHANISMS}
    scram_delete = [k for k in delete if k.upper() in SCRAM_MECHANISMS]
    quota_ops: dict[str, float | None] = {k: None for k in delete if k not in scram_delete}
    for key, value in add.items():
        if key in scram_add:
            continue
        try:
            quota_ops[key] = float(value)
        except ValueError:
            raise CliError(f"Invalid value {value!r} for the quota {key}: expected a number") from None
    if scram_add or scram_delete:
        user = entity.get(ClientQuotaEntity.USER)
        if set(entity) != {ClientQuotaEntity.USER} or user is None:
            raise CliError("SCRAM credentials can only be set for one named user (--entity-type users "
                           "--entity-name NAME)")
        alterations: list[UserScramCredentialUpsertion | UserScramCredentialDeletion] = [
            _scram_upsertion(user, ScramMechanismType.for_name(k).mechanism_name, v) for k, v in scram_add.items()]
        alterations += [UserScramCredentialDeletion(user, k) for k in scram_delete]
        admin.alter_user_scram_credentials(alterations, timeout=timeout)
    if quota_ops:
        admin.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity(entity), quota_ops)], timeout=timeout)


def describe(admin: AdminClient, entity: Selection, timeout: float) -> None:
    """Quota lines for the entities matching ``entity`` (a name, None for the default, Every.EVERY for every
    entity of the type), then, for users named or all (not their default, not with clients), a SCRAM line
    per user."""
    components = []
    for kind, name in entity.items():
        if name is Every.EVERY:
            components.append(ClientQuotaFilterComponent.of_entity_type(kind))
        elif name is None:
            components.append(ClientQuotaFilterComponent.of_default_entity(kind))
        else:
            components.append(ClientQuotaFilterComponent.of_entity(kind, str(name)))
    quotas = admin.describe_client_quotas(ClientQuotaFilter.contains_only(components), timeout=timeout)
    for found, values in sorted(quotas.items(), key=lambda kv: sorted((k, v or "") for k, v in
                                                                       kv[0].entries.items())):
        shown = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(values.items()))
        print(f"Quota configs for {entity_text(found.entries)} are {shown}")
    if set(entity) != {ClientQuotaEntity.USER} or entity[ClientQuotaEntity.USER] is None:
        return
    user = entity[ClientQuotaEntity.USER]
    try:
        described = admin.describe_user_scram_credentials(None if user is Every.EVERY else [str(user)],
                                                          timeout=timeout)
    except ResourceNotFoundError as e:
        print(f"Error retrieving SCRAM credential configs for user-principal '{user}': "
              f"ResourceNotFoundException: {e}")
        return
    for name, description in sorted(described.items()):
        infos = ", ".join(f"{i.mechanism.mechanism_name}=iterations={i.iterations}"
                          for i in description.credential_infos)
        print(f"SCRAM credential configs for user-principal '{name}' are {infos}")

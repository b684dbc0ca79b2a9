"""The async admin client offers every public operation of the sync AdminClient, as a coroutine with the same
parameters (so an operation added to one and forgotten in the other fails here)."""

from __future__ import annotations

import inspect

from pykafka_client.admin import AdminClient
from pykafka_client.aio import AsyncAdminClient


def _operations(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(cls).items()
            if not name.startswith("_") and inspect.isfunction(member)}


def test_every_admin_operation_has_an_async_twin_with_the_same_parameters() -> None:
    sync_ops = _operations(AdminClient)
    async_ops = _operations(AsyncAdminClient)
    missing = sorted(set(sync_ops) - set(async_ops))
    assert not missing, f"AsyncAdminClient lacks {missing}"
    for name, signature in sync_ops.items():
        assert inspect.iscoroutinefunction(getattr(AsyncAdminClient, name)), name
        assert list(async_ops[name].parameters) == list(signature.parameters), name

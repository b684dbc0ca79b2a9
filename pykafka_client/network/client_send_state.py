"""A NetworkClient's send-side state: what its ``ready`` and ``send`` keep between them (Java keeps none: its send
asks ``canSendRequest`` again, and chooses the version per request).

:class:`ClientSendState` is the reference, which the client uses without the kernel; with the kernel on a real
Selector the client's state is the kernel's ``ClientSendPath`` (``records/kernel/client_send_path.c.h``), which holds
the same attributes and also is the client's ``ready`` and ``send`` (their common case in one call each, the rest
through ``NetworkClient.ready`` and ``NetworkClient._do_send``, the reference).
"""

from __future__ import annotations

from typing import Protocol

#: Entries of the version-choice cache before it starts again (nodes x request types x allowed ranges).
MAX_VERSIONS_CHOSEN = 1024


class SendState(Protocol):
    """What a NetworkClient's ``send_state`` is at run time: a :class:`ClientSendState` (the reference) or the
    kernel's ``ClientSendPath``, which is not a subclass of it; both hold these attributes."""

    ready_node: str | None
    ready_at_ms: int
    versions_chosen: dict[tuple[str, type, int | None, int | None], tuple[object, int]]
    active: bool


class ClientSendState:
    """The ready cache, the versions chosen and whether the client is active."""

    __slots__ = ("active", "ready_at_ms", "ready_node", "versions_chosen")

    def __init__(self) -> None:
        #: the node (and time) that ``ready``/``is_ready`` last found ready to take a request, until something changes
        #: what it read (a send, a poll, a connection opened or closed: each sets ``ready_node`` to None): the
        #: Sender's send follows its ready() at once, so the same question is answered once
        self.ready_node: str | None = None
        self.ready_at_ms: int = 0
        #: (node id, body type, oldest, latest allowed version) -> (the node's NodeApiVersions it was chosen for, the
        #: version): a node's versions object is replaced, never changed, when they change, so the choice holds while it
        #: is the same object (one lookup per request instead of the range arithmetic)
        self.versions_chosen: dict[tuple[str, type, int | None, int | None], tuple[object, int]] = {}
        #: False once the client is closing (its send raises then)
        self.active = True

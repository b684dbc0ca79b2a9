"""A NetworkClient's poll state: what its ``poll`` reads to skip the work a poll has not got (Java's NetworkClient keeps
the aborted sends; the rest are this client's shortcuts).

:class:`ClientPollState` is the reference, which the client uses without the kernel; with the kernel the client's
state is the kernel's ``ClientPollPath`` (``records/kernel/client_poll.c.h``), which holds the same attributes and also
is the client's ``poll`` (its common case in one call, the rest through ``NetworkClient.poll`` and
``NetworkClient.complete_poll``, the reference).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pykafka_client.network.client_response import ClientResponse


class PollState(Protocol):
    """What a NetworkClient's ``poll_state`` is at run time: a :class:`ClientPollState` (the reference) or the kernel's
    ``ClientPollPath``, which is not a subclass of it; both hold these attributes."""

    aborted_sends: list[ClientResponse]
    fire_and_forget_sent: bool
    handshakes_may_be_due: bool
    may_be_connecting: bool


class ClientPollState:
    """The aborted sends and the flags that say which of a poll's questions can have an answer."""

    __slots__ = ("aborted_sends", "fire_and_forget_sent", "handshakes_may_be_due", "may_be_connecting")

    def __init__(self) -> None:
        #: requests that completed without touching the network (version mismatches, a client's disconnect): the next
        #: poll hands them back at once
        self.aborted_sends: list[ClientResponse] = []
        #: True once a request that expects no response (acks=0) was sent: only then can a completed send complete a
        #: request (a producer with acks=1 or all, and a consumer, never have one: no look at each completed send)
        self.fire_and_forget_sent = False
        #: False while no connection can be waiting for its ApiVersions request (a node connected since sets it) and
        #: while none is being set up (a connect begun since sets it): the poll asks neither then
        self.handshakes_may_be_due = False
        self.may_be_connecting = False

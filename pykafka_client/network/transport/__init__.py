"""Transport: Selector, channels, framing, TLS and SASL (Java's ``common.network`` and ``common.security``).

Shared by the clients and by mini_broker; knows nothing of requests, metadata or clients.
"""

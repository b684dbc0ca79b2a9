"""The broker's socket server: Acceptor, Processors, ConnectionQuotas and the RequestChannel."""

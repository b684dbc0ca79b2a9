"""The distribution's version: a leaf module, so any layer may import it without pulling in the clients."""

__version__ = "0.1.0.dev0"

"""admin layer (see docs/ARCHITECTURE.md)."""

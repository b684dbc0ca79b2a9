"""network layer (see docs/ARCHITECTURE.md)."""

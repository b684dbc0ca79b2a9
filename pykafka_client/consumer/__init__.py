"""consumer layer (see docs/ARCHITECTURE.md)."""

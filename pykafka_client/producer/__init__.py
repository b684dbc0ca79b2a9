"""producer layer (see docs/ARCHITECTURE.md)."""

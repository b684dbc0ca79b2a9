"""Small helpers shared by the broker's packages (no broker state here)."""

"""Small shared utilities: time, timers."""

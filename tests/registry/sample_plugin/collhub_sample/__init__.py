"""A tiny collhub plugin used by the registry tests."""

MARKER = "installed"

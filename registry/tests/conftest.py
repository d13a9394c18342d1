"""Fixtures of the registry service's tests: the plugin wheels, a built site and a live server.

They are the client tests' fixtures (``tests/registry/conftest.py``), shared so that both
sides index the same real pip-built wheels.
"""

from tests.registry.conftest import server, site, wheels  # noqa: F401 - fixtures reused here

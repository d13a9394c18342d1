"""Fixtures shared across the test trees of the repository (tests/, plugins/*/tests, registry/tests).

Loaded from here, the top of the tree, so that each session-scoped fixture has exactly one
definition and is built once per test run, whichever trees a run collects.
"""

pytest_plugins = ["tests.registry.wheels"]

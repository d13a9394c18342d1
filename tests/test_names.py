"""PEP 503 name normalisation, the one definition (hub/_names.py) every comparison of distribution names uses."""

from __future__ import annotations

import pytest

from hub._names import normalize_name


@pytest.mark.parametrize(
    ("name", "normal"),
    [
        # PEP 503's own examples: all of these are the same project
        ("friendly-bard", "friendly-bard"),
        ("Friendly-Bard", "friendly-bard"),
        ("FRIENDLY-BARD", "friendly-bard"),
        ("friendly.bard", "friendly-bard"),
        ("friendly_bard", "friendly-bard"),
        ("friendly--bard", "friendly-bard"),
        ("FrIeNdLy-._.-bArD", "friendly-bard"),
        ("collhub_astra_sim", "collhub-astra-sim"),
    ],
)
def test_pep_503(name: str, normal: str) -> None:
    assert normalize_name(name) == normal


def test_the_registry_and_the_plugin_loader_use_it() -> None:
    import hub.plugins._identity as identity
    import hub.plugins._manager as manager
    import hub.registry as registry

    assert registry.normalize_name is normalize_name
    assert manager.normalize_name is normalize_name and identity.normalize_name is normalize_name

"""Registers one producer; its code lives behind a lazy reference."""

from hub.plugins import ProducerSpec, hookimpl


@hookimpl
def collhub_producers():
    return [ProducerSpec(name="pairs", summary="Pairwise exchange", factory="collhub_sample.plugin:produce")]


def produce(params, ctx):  # pragma: no cover - not run by the registry tests
    raise NotImplementedError

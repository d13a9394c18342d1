"""ASTRA-sim's own collectives and its command line, as ``hub.simulate`` reproduces them.

Which of a system.json's collectives are reproduced (:mod:`.collectives`, :mod:`.system`), their
schedules (:mod:`.ring`, :mod:`.direct`, :mod:`.halving_doubling`, :mod:`.double_binary_tree`,
shared rules in :mod:`.ops`, streams and phases in :mod:`.streams`), a workload lowered to an
engine program (:mod:`.workload`), the inputs ASTRA-sim aborts on (:mod:`.refusals`) and the
``collhub astra-sim`` drop-in (:mod:`.dropin`, :mod:`.dropin_run`). "Native" in ``hub`` means
the C extensions (``hub._native``) and nothing else.

Private to :mod:`hub.sim`: nothing here is re-exported; ``hub.sim`` names what is public.
"""

__all__: list[str] = []

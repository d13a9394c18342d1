"""The engine of ``hub.simulate``: a program of per-rank nodes (:mod:`.program`), its issue order
(:mod:`.feeder`), its tables in engine order (:mod:`.layout`), the network models
(:mod:`.network`) and the event loop that walks it in C (:mod:`.loop`).

Private to :mod:`hub.sim`: nothing here is re-exported; ``hub.sim`` names what is public.
"""

__all__: list[str] = []

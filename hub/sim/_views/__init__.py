"""What a simulation gives back and how it is shown: the result (:mod:`.result`), the
Chrome/Perfetto trace and the plot (:mod:`.trace`, tracks from :mod:`.tracks`), the per-node
timeline (:mod:`.timeline`) and the per-rank breakdown (:mod:`.breakdown`).

Private to :mod:`hub.sim`: nothing here is re-exported; ``hub.sim`` names what is public.
"""

__all__: list[str] = []

"""The lower bounds a simulated time is held against: the cut bound and its certificate
(:mod:`.cut`, :mod:`.certificate`), the link-load bound (:mod:`.linkload`) and the grade of an
algorithm against them (:mod:`.grade`).

Private to :mod:`hub.sim`: nothing here is re-exported; ``hub.sim`` names what is public.
"""

__all__: list[str] = []

"""The record of a run: one result row (:mod:`.row`), ``rows.jsonl`` as rows come
(:mod:`.rowlog`) and the run directory committed whole or marked incomplete (:mod:`.rundir`).
Reading a run back is :mod:`hub.results`'s.

Private to :mod:`hub.pipeline`: nothing here is re-exported; ``hub.pipeline`` names what is public.
"""

__all__: list[str] = []

"""The pipeline file: read with source positions (:mod:`.loader`) within documented limits
(:mod:`.limits`), its model (:mod:`.model`), the sweep matrix and ``${var}`` interpolation
(:mod:`.matrix`), and the two-pass validation (:mod:`.validate`).

Private to :mod:`hub.pipeline`: nothing here is re-exported; ``hub.pipeline`` names what is public.
"""

__all__: list[str] = []

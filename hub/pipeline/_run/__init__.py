"""The run: which plugin manager (:mod:`.env`), the plan and its content keys (:mod:`.plan`,
:mod:`.keys`), the unit of work (:mod:`.unit`) and where units execute (:mod:`.executors`,
:mod:`.dask_cluster`), observer hooks (:mod:`.hooks`), interrupts (:mod:`.interrupt`) and the
runner that ties them together (:mod:`.runner`).

Private to :mod:`hub.pipeline`: nothing here is re-exported; ``hub.pipeline`` names what is public.
"""

__all__: list[str] = []

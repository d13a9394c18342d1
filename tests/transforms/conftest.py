"""Makes the verifier tests' hand-made algorithms importable as ``verify_handmade``."""

from __future__ import annotations

import sys
from pathlib import Path

_HANDMADE = str(Path(__file__).resolve().parents[1] / "verify")
if _HANDMADE not in sys.path:
    sys.path.insert(0, _HANDMADE)

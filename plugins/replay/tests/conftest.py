"""Fixtures of the collhub-replay tests."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest's importlib mode does not put test directories on sys.path: the helpers live here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

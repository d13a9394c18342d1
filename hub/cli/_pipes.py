"""A reader that stops reading (``collhub ... | head``) ends the command quietly.

When the pipe closes, the next write raises BrokenPipeError; the command stops there, nothing
is printed (stderr may be the same terminal, and a message would only be noise), and stdout is
pointed at /dev/null so the interpreter's final flush cannot raise the same error again. The
exit status is 141 (128 + SIGPIPE), what a Unix tool killed by the signal reports.
"""

from __future__ import annotations

import os
import sys

__all__ = ["BROKEN_PIPE_EXIT", "is_broken_pipe", "silence_stdout"]

BROKEN_PIPE_EXIT = 141


def is_broken_pipe(exc: BaseException) -> bool:
    return isinstance(exc, BrokenPipeError)


def silence_stdout() -> None:
    """Redirect fd 1 to /dev/null (best effort: stdout may already be gone)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass

"""Progress lines on stderr: light to import (a command that ends up measuring nothing need not load the fits)."""

from __future__ import annotations

import sys
import time


class Progress:
    """One line per phase on stderr with elapsed time."""

    def __init__(self, enabled: bool = True, prefix: str = "calibrate"):
        self.enabled, self.prefix, self.t0 = enabled, prefix, time.monotonic()

    def __call__(self, msg: str) -> None:
        if self.enabled:
            print(f"{self.prefix} [{time.monotonic() - self.t0:6.1f} s] {msg}", file=sys.stderr, flush=True)

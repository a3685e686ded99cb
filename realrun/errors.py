"""Errors of real runs (no torch import here)."""


class RunFailure(RuntimeError):
    """A rank raised, died, hung or timed out; the message names the rank and the cause."""

    def __init__(self, message: str, rank: int | None = None):
        super().__init__(message)
        self.rank = rank

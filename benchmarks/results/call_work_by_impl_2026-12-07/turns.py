"""What the analyses here share: a run's steps read back per side, each step's events at its last rank."""

import statistics
from typing import Any

from calibration.timeline import across_ranks_timelines, step_terms


def side_terms(ranks: list[dict[str, Any]], side: str) -> list[dict[str, Any]]:
    """``step_terms`` of each of ``side``'s recorded steps, every event at the last rank to reach it."""
    rec = {
        "step_times_s": [max(ts) for ts in zip(*(r[side]["step_times_s"] for r in ranks))],
        "rank_step_times_s": [r[side]["step_times_s"] for r in ranks],
        "rank_timelines": [r[side]["timeline"] for r in ranks],
    }
    return [step_terms(x) for x in across_ranks_timelines(rec)]


def bare_by_turn(ranks: list[dict[str, Any]], n_turns: int) -> tuple[list[float], list[float]]:
    """The compute-only steps (the slower rank's) and, per turn, the median of that turn's."""
    bare = [max(ts) for ts in zip(*(r["bare"]["step_times_s"] for r in ranks))]
    k = len(bare) // n_turns
    return bare, [statistics.median(bare[i * k : (i + 1) * k]) for i in range(n_turns)]

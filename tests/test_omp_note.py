"""The OpenMP spin warning: gloo ranks with several threads each and OMP_WAIT_POLICY not PASSIVE."""

from __future__ import annotations

import pytest

from realrun.launch import RankPool, omp_spin_note


@pytest.mark.parametrize("policy", [None, "", "ACTIVE", "active"])
def test_note_for_multithreaded_gloo_ranks_unless_passive(policy):
    env = {} if policy is None else {"OMP_WAIT_POLICY": policy}
    note = omp_spin_note("gloo", 8, env)
    assert note is not None
    assert "8 OpenMP threads" in note and "OMP_WAIT_POLICY=PASSIVE" in note
    assert ("unset" if not policy else policy.upper()) in note


@pytest.mark.parametrize(
    ("backend", "threads", "env"),
    [
        ("gloo", 1, {}),  # one thread per rank: no idle OpenMP threads to spin
        ("gloo", 8, {"OMP_WAIT_POLICY": "PASSIVE"}),
        ("gloo", 8, {"OMP_WAIT_POLICY": " passive "}),
        ("nccl", 8, {}),  # NCCL's progress runs on the GPU's side, not on gloo's CPU threads
        ("gloo", 8, {"GOMP_SPINCOUNT": "0"}),  # libgomp told not to spin
        ("gloo", 8, {"KMP_BLOCKTIME": "0"}),  # Intel's OpenMP told not to spin
    ],
)
def test_no_note(backend, threads, env):
    assert omp_spin_note(backend, threads, env) is None


def test_note_only_when_the_threads_fill_the_cores():
    assert omp_spin_note("gloo", 8, {}, world_size=2, cores=16) is not None
    assert "the 16 cores" in omp_spin_note("gloo", 8, {}, world_size=2, cores=16)
    assert omp_spin_note("gloo", 4, {}, world_size=2, cores=16) is None  # 8 threads on 16 cores: spare cores
    assert omp_spin_note("gloo", 8, {}, world_size=1, cores=8) is None  # one rank: no communication to slow
    # under torchrun, one rank per node of 8 cores, 8 threads: the node's cores are filled, the ranks talk
    note = omp_spin_note("gloo", 8, {}, world_size=2, cores=8, local_ranks=1)
    assert note is not None and note.startswith("note: 1 gloo rank x 8 OpenMP threads fill the 8 cores")


def test_torchrun_group_note_counts_the_ranks_on_this_node(monkeypatch):
    import realrun.launch as launch
    from ddpsim.ddp_commands import TorchrunGroup

    monkeypatch.setattr(launch, "usable_cpus", lambda: 8)
    for var in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"):
        monkeypatch.delenv(var, raising=False)
    group = TorchrunGroup.__new__(TorchrunGroup)  # its state, without torch or a process group
    group.world_size, group.backend, group.threads_per_rank = 4, "gloo", 8
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")  # 4 nodes, one rank each
    assert group.omp_note is not None and "1 gloo rank x 8" in group.omp_note
    group.threads_per_rank = 4
    assert group.omp_note is None  # 4 of the node's 8 cores: spare cores


def test_pool_note_reads_the_ranks_environment(monkeypatch):
    """The pool's note sees what its ranks will see: the process environment and the per-rank extras."""
    import realrun.launch as launch

    monkeypatch.setattr(launch, "usable_cpus", lambda: 8)  # 2 ranks x 4 threads fill 8 cores
    for var in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"):
        monkeypatch.delenv(var, raising=False)
    assert RankPool(2, "gloo", threads_per_rank=4).omp_note is not None  # not started: no process spawned
    assert RankPool(2, "gloo", threads_per_rank=1).omp_note is None
    assert RankPool(1, "gloo", threads_per_rank=4).omp_note is None  # one rank: no communication to slow
    passive = [{"OMP_WAIT_POLICY": "PASSIVE"}] * 2
    assert RankPool(2, "gloo", threads_per_rank=4, rank_env=passive).omp_note is None
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert RankPool(2, "gloo", threads_per_rank=4).omp_note is None


def test_validate_text_carries_the_note():
    from calibration.validate import format_validation

    res = {
        "model": "gpt",
        "world_size": 2,
        "backend": "gloo",
        "link_mbit": None,
        "measured_compute_s": 0.05,
        "predicted_compute_s": 0.05,
        "rows": [],
        "median_abs_error_pct": 0.0,
        "worst_abs_error_pct": 0.0,
        "n_configs": 0,
        "best_bucket": {},
    }
    assert "OpenMP" not in format_validation(res)
    res["omp_note"] = omp_spin_note("gloo", 8, {})
    assert res["omp_note"] in format_validation(res)

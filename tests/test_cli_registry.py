"""The CLI's command table (``ddpsim.cli.COMMAND_MODULES``) against what the modules register.

``ddpsim COMMAND`` imports only the module the table names for COMMAND, so a command missing from the
table, or listed under the wrong module, would vanish from that command line. These tests build each
family's parser on its own and compare.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from ddpsim.cli import COMMAND_MODULES, build_parser, main


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


@pytest.mark.parametrize("family", sorted(set(COMMAND_MODULES.values())))
def test_each_module_registers_exactly_the_commands_the_table_gives_it(family: str) -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    importlib.import_module(f"ddpsim.{family}").add_commands(sub)
    assert sorted(sub.choices) == sorted(c for c, m in COMMAND_MODULES.items() if m == family)


def test_the_full_parser_lists_the_table_in_its_order() -> None:
    assert _commands(build_parser()) == list(COMMAND_MODULES)


@pytest.mark.parametrize("command", list(COMMAND_MODULES))
def test_a_named_command_parses_the_same_as_with_every_command_registered(command: str) -> None:
    full = build_parser()
    only = build_parser(command)
    assert command in _commands(only)
    full_sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    only_sub = next(a for a in only._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    assert full_sub.format_help() == only_sub.format_help()


def test_an_unknown_command_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err
    for command in COMMAND_MODULES:
        assert f"'{command}'" in err


def test_sweep_does_not_import_the_measuring_commands() -> None:
    code = (
        "import sys\n"
        "from ddpsim.cli import main\n"
        "rc = main(['sweep', '--model', 'mlp', '--world-size', '2', '--quiet'])\n"
        "heavy = [m for m in ('ddpsim.run_commands', 'ddpsim.calib_commands', 'ddpsim.tune_command', "
        "'realrun.bench_allreduce', 'torch') if m in sys.modules]\n"
        "print(rc, heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0 []"


def test_calibrates_defaults_are_the_specs() -> None:
    # `ddpsim calibrate` passes these to CalibrateSpec, and `tune` calibrates with CalibrateSpec's own defaults: the two
    # literals must agree, or the two commands calibrate differently (the in-step probe's 4 s was changed in both)
    from calibration.calibrate import CalibrateSpec

    args = build_parser().parse_args(["calibrate"])
    spec = CalibrateSpec(model="gpt")
    fields = ("profile_steps", "contention_steps", "step_probe_steps", "step_probe_seconds", "step_probe_check")
    fields += ("cold_call_reps", "switch_reps", "sharded_steps")
    for f in fields:
        assert getattr(args, f) == getattr(spec, f), f

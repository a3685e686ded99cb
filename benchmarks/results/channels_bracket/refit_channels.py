"""Refit one calibration's records with the channel count forced (the whole fit, in-step probe included,
made under that count): ``python refit_channels.py RECORDS N OUT.json`` (N = 1 or 2; never pipelined)."""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import calibration.calibrate as cal  # noqa: E402
from calibration.params import save_params  # noqa: E402
from calibration.refit import refit_from_records  # noqa: E402

records, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fit_network = cal.fit_network


def forced(*a, **kw):
    return dataclasses.replace(fit_network(*a, **kw), channels=n, pipelined=False)


cal.fit_network = forced
save_params(refit_from_records(records), out)

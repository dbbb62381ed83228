"""Moved to :mod:`ibemu.studies.cca.experiments`."""
# shim: removed at merge
from ...studies.cca.experiments import *  # noqa: F401,F403
from ...studies.cca.experiments import AFTER_XY_WIN, EARLY_WIN, VICTIM_WIN, run_case  # noqa: F401

"""Moved to :mod:`ibemu.studies.cca.testbed`."""
# shim: removed at merge
from ...studies.cca.testbed import *  # noqa: F401,F403
from ...studies.cca.testbed import CONTRIBUTORS, PAPER_STARTS_S, dcms_testbed, dcms_testbed_dict  # noqa: F401

"""Moved to :mod:`ibemu.studies.dcms.testbed`."""
# shim: removed at merge
from ...studies.dcms.testbed import *  # noqa: F401,F403
from ...studies.dcms.testbed import (EXP2_STARTS_S, FLOW_BYTES_PER_S, PAPER_FLOW_BYTES,  # noqa: F401
                                     experiment2, experiment2_dict)

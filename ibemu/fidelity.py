"""Moved to :mod:`ibemu.runtime.fidelity`."""
# shim: removed at merge
from .runtime.fidelity import *  # noqa: F401,F403
from .runtime.fidelity import MIN_SHARE, compare, compare_summaries, format_fidelity  # noqa: F401

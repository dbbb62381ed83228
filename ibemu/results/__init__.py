"""Results of a run: the hot-path recorder (:mod:`.metrics`), the pure rate and
fairness functions (:mod:`.rates`), the summary and its text table (:mod:`.summary`),
the output folder (:mod:`.outputs`), the progress bar (:mod:`.progress`) and reading an
output folder back (:mod:`.reader`; as pandas DataFrames, :mod:`.frames`; a sweep's
folder, :mod:`.sweep_frames`), and the
HTML report (:mod:`.report`, imported on its own: it needs Plotly)."""
from __future__ import annotations

from .frames import Run, load_run
from .metrics import FlowLike, Metrics
from .outputs import PORT_SERIES, write_outputs
from .progress import Progress
from .rates import jain_index, sliding_rate
from .reader import Results, Series, load_results, read_series, read_traces
from .summary import format_summary_table, summarize
from .sweep_frames import Sweep, load_sweep

__all__ = ["FlowLike", "Metrics", "PORT_SERIES", "Progress", "Results", "Run", "Series", "format_summary_table",
           "jain_index", "load_results", "load_run", "read_series", "read_traces", "sliding_rate", "summarize",
           "Sweep", "load_sweep", "write_outputs"]

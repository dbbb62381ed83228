"""One run of an HP reproduction's sweep (:mod:`.figures`, :mod:`.comparison`): a
:data:`Spec` and its measurement, module-level functions so that
:meth:`~ibemu.studies.reproduction.RunCache.map` can hand a sweep's runs to Dask's workers."""
from __future__ import annotations

from typing import Any

from .experiments import measure, measure_with_rates

__all__ = ["Values", "Spec", "measure_spec", "measure_spec_rates"]

Values = dict[str, float]


Spec = tuple[Any, float, float, dict[str, tuple[float, float]] | None]
"""One run of a figure's sweep: (scenario, window from ms, window to ms, extra windows)."""


def measure_spec(spec: Spec) -> Values:
    """:func:`.experiments.measure` of one :data:`Spec` (a module-level function, so that
    :meth:`RunCache.map` can hand the runs of a sweep to Dask's workers)."""
    scn, t_from, t_to, extra = spec
    return measure(scn, t_from, t_to, extra_windows=extra)


def measure_spec_rates(spec: Spec) -> dict[str, Any]:
    """:func:`measure_spec`, and under ``"rates"`` the run's rates over time
    (:func:`.experiments.measure_with_rates`) for a figure drawn against time (Figure 4)."""
    scn, t_from, t_to, extra = spec
    m, rates = measure_with_rates(scn, t_from, t_to, extra_windows=extra)
    return {**m, "rates": rates}

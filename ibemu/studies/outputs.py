"""A study's table in its output folder, the same way for every study
(congestion_tree, interference, adaptive): ``STEM.md``, the Markdown table the study
prints, and ``STEM.json``, the values behind it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["write_table"]


def write_table(out_dir: str | Path, stem: str, table: str, values: Any) -> Path:
    """Write *table* and *values* as ``STEM.md`` and ``STEM.json`` in *out_dir* (made if
    missing, with its parents); the folder, for the study's other files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / (stem + ".md")).write_text(table + "\n")
    (out / (stem + ".json")).write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
    return out

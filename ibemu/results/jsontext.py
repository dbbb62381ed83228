"""results.json and config.json as text (issue 28: the outputs of large runs).

:func:`dumps` gives exactly ``json.dumps(clean(obj), sort_keys=True, indent=2)``, where
``clean`` makes a JSON-ready copy (:func:`clean`): str keys, floats to 9 significant
digits, NaN and infinities as null, NumPy scalars and arrays and dataclasses as plain
values.  The standard library encodes with an indent in pure Python, a generator per
container and a yield per item; at 11,664 hosts results.json is 62 MB, 163k objects and
1.9M numbers, and copying then encoding it took about 8 s.  :func:`dumps` does both in one
pass and writes each item of a container as one string.  Strings are quoted by the
standard library's own (C) ``encode_basestring_ascii``; numbers by ``int.__repr__`` and
``float.__repr__``, as :mod:`json` does.  A container of plain scalars only (a port's
counters, a link's totals: at 11,664 hosts 150k of them, :func:`_leaf`) is written by the
standard library's C encoder, with the item separator that the indent puts between its
items.  tests/test_results_jsontext.py compares the two.
"""
from __future__ import annotations

import dataclasses
import json.encoder
import math
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

_SCALARS = (bool, type(None), str)
_PLAIN = frozenset((str, int, float, bool, type(None)))
"""The types :func:`_leaf` writes with the C encoder (exactly these: no subclass)."""
_STR = {str}
_encoders: dict[str, Callable[[Any, int], Any]] = {}


def clean(obj: Any) -> Any:
    """JSON-ready copy: str keys, floats rounded to 9 significant digits, NaN/inf -> None."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, _SCALARS):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _float(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return clean(dataclasses.asdict(obj))
    if isinstance(obj, np.ndarray):
        return clean(obj.tolist())
    return str(obj)


def _float(obj: Any) -> float | None:
    x = float(obj)
    if not math.isfinite(x):
        return None
    x = float("%.9g" % x)
    return 0.0 if x == 0 else x


def _scalar(obj: Any) -> str | None:
    """The JSON text of *obj* cleaned, or None for a container (a dict, list, tuple,
    dataclass or array), which :func:`_write` opens."""
    t = type(obj)
    if t is str:
        return encode_basestring_ascii(obj)
    if t is float:
        x = _float(obj)
        return "null" if x is None else float.__repr__(x)
    if t is int:
        return int.__repr__(obj)
    if t is bool:
        return "true" if obj else "false"
    if obj is None:
        return "null"
    if isinstance(obj, np.ndarray) and obj.ndim == 0:
        return _scalar(obj.tolist())
    if isinstance(obj, (dict, list, tuple, np.ndarray)) or (dataclasses.is_dataclass(obj)
                                                            and not isinstance(obj, type)):
        return None
    c = clean(obj)                      # subclasses and NumPy scalars, as clean has them
    if c is None:
        return "null"
    if c is True or c is False:
        return "true" if c else "false"
    if isinstance(c, str):
        return encode_basestring_ascii(c)
    return int.__repr__(c) if isinstance(c, int) else float.__repr__(c)


def _leaf(obj: dict[Any, Any] | list[Any] | tuple[Any, ...], nl: str) -> str | None:
    """The text of *obj* at the indent of *nl* when it is not empty and holds plain
    scalars only (:data:`_PLAIN`; a dict: under str keys), else None.  The C encoder
    (``json.encoder.c_make_encoder``, as :func:`json.dumps` uses it without an indent)
    writes the items with ``"," + nl + "  "`` between them, the indent's own separator,
    after its floats are cleaned; the opening and closing lines are added here."""
    make = getattr(json.encoder, "c_make_encoder", None)     # None: no _json module
    if not obj or make is None:
        return None
    if isinstance(obj, dict):
        if set(map(type, obj)) != _STR:
            return None
        kinds = set(map(type, obj.values()))
        if not kinds <= _PLAIN:
            return None
        if float in kinds:
            obj = {k: _float(v) if type(v) is float else v for k, v in obj.items()}
    else:
        kinds = set(map(type, obj))
        if not kinds <= _PLAIN:
            return None
        if float in kinds:
            obj = [_float(v) if type(v) is float else v for v in obj]
    inner = nl + "  "
    encode = _encoders.get(inner)
    if encode is None:
        encode = _encoders[inner] = make(None, _unencodable, encode_basestring_ascii, None, ": ", "," + inner,
                                         True, False, True)
    text = "".join(encode(obj, 0))
    return text[0] + inner + text[1:-1] + nl + text[-1]


def _unencodable(obj: Any) -> Any:
    raise TypeError("not a plain JSON value: %r" % (obj,))   # (never: _leaf checks the types first)


def _write(obj: Any, out: list[str], nl: str) -> None:
    """Append the text of the container *obj* at the indent of *nl* ("\\n" and spaces)."""
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    elif not isinstance(obj, (dict, list, tuple)):
        obj = dataclasses.asdict(obj)
    leaf = _leaf(obj, nl)
    if leaf is not None:
        out.append(leaf)
        return
    inner = nl + "  "
    if isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        if not all(type(k) is str for k in obj):
            obj = {str(k): v for k, v in obj.items()}
        sep = "{" + inner
        for k in sorted(obj):
            v = obj[k]
            text = _scalar(v)
            if text is None:
                out.append(sep + encode_basestring_ascii(k) + ": ")
                _write(v, out, inner)
            else:
                out.append(sep + encode_basestring_ascii(k) + ": " + text)
            sep = "," + inner
        out.append(nl + "}")
        return
    if not obj:
        out.append("[]")
        return
    sep = "[" + inner
    for v in obj:
        text = _scalar(v)
        if text is None:
            out.append(sep)
            _write(v, out, inner)
        else:
            out.append(sep + text)
        sep = "," + inner
    out.append(nl + "]")


def dumps(obj: Any) -> str:
    """``json.dumps(clean(obj), sort_keys=True, indent=2)`` (the module text)."""
    text = _scalar(obj)
    if text is not None:
        return text
    out: list[str] = []
    _write(obj, out, "\n")
    return "".join(out)

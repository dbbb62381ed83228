"""results.json and config.json as text (issue 28: the outputs of large runs).

:func:`dumps` gives exactly ``json.dumps(clean(obj), sort_keys=True, indent=2)``, where
``clean`` makes a JSON-ready copy (:func:`clean`): str keys, floats to 9 significant
digits, NaN and infinities as null, NumPy scalars and arrays and dataclasses as plain
values.  The standard library encodes with an indent in pure Python, a generator per
container and a yield per item; at 11,664 hosts results.json is 62 MB, 163k objects and
1.9M numbers, and copying then encoding it took about 8 s.  :func:`dumps` does both in one
pass and writes each item of a container as one string.  Strings are quoted by the
standard library's own (C) ``encode_basestring_ascii``; numbers by ``int.__repr__`` and
``float.__repr__``, as :mod:`json` does.  A dict's keys are sorted and quoted once for all
the dicts with the same keys, and a container of plain scalars only (a port's counters, a
link's totals: at 11,664 hosts 150k of them) is one string (:func:`_write`).
tests/test_results_jsontext.py compares the two.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from itertools import chain, repeat
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import Any

import numpy as np

_SCALARS = (bool, type(None), str)
_PLAIN = frozenset((str, int, float, bool, type(None)))
"""The scalars :func:`_scalar` writes itself (exactly these types: no subclass)."""
_INT = {int}


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


Form = tuple[Callable[[dict[str, Any]], tuple[Any, ...]], list[str], str]
"""How a dict with given keys is written at a given indent: the function that takes its
values in key order, the text before each value (the separator, the indent and the
quoted key) and the whole dict's text with a ``%s`` for each value."""
Forms = dict[tuple[tuple[str, ...], str], Form]


def _form(keys: tuple[str, ...], nl: str) -> Form:
    """The :data:`Form` of a dict with the str keys *keys* at the indent of *nl*."""
    order = sorted(keys)
    inner = nl + "  "
    heads = [("{" if i == 0 else ",") + inner + encode_basestring_ascii(k) + ": " for i, k in enumerate(order)]
    text = "".join(h.replace("%", "%%") + "%s" for h in heads) + nl + "}"
    if len(order) == 1:
        key = order[0]
        return (lambda d: (d[key],)), heads, text
    return itemgetter(*order), heads, text


def _write(obj: Any, out: list[str], nl: str, forms: Forms) -> None:
    """Append the text of the container *obj* at the indent of *nl* ("\\n" and spaces).

    A dict's keys are sorted and quoted once per set of keys and indent (*forms*: the
    11,664 flows or 70k ports of results.json share a few); a container of plain scalars
    (:data:`_PLAIN`) is written in one string: its values' texts (ints as they are, by
    ``"%s"``) into its :data:`Form`'s text, or joined."""
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    elif not isinstance(obj, (dict, list, tuple)):
        obj = dataclasses.asdict(obj)
    if not obj:
        out.append("{}" if isinstance(obj, dict) else "[]")
        return
    inner = nl + "  "
    if isinstance(obj, dict):
        keys = tuple(obj)
        form = forms.get((keys, nl))
        if form is None:
            if not all(type(k) is str for k in keys):
                _write({str(k): v for k, v in obj.items()}, out, nl, forms)
                return
            form = forms[(keys, nl)] = _form(keys, nl)
        take, heads, text = form
        values = take(obj)
        kinds = set(map(type, values))
        if kinds == _INT:
            out.append(text % values)
        elif kinds <= _PLAIN:
            out.append(text % tuple(map(_scalar, values)))
        else:
            _items(zip(heads, values, strict=True), out, inner, forms)
            out.append(nl + "}")
        return
    sep = "," + inner
    kinds = set(map(type, obj))
    if kinds == _INT:
        out.append("[" + inner + sep.join(map(int.__repr__, obj)) + nl + "]")
    elif kinds <= _PLAIN:
        out.append("[" + inner + sep.join(map(_scalar, obj)) + nl + "]")     # type: ignore[arg-type]
    else:
        _items(zip(chain(("[" + inner,), repeat(sep)), obj), out, inner, forms)
        out.append(nl + "]")


def _items(items: Iterable[tuple[str, Any]], out: list[str], inner: str, forms: Forms) -> None:
    """Append each value of a container after the text before it (``(head, value)``): a
    scalar's text on the head's line, a container's text after the head (at *inner*)."""
    for head, v in items:
        t = _scalar(v)
        if t is None:
            out.append(head)
            _write(v, out, inner, forms)
        else:
            out.append(head + t)


def dumps(obj: Any) -> str:
    """``json.dumps(clean(obj), sort_keys=True, indent=2)`` (the module text)."""
    text = _scalar(obj)
    if text is not None:
        return text
    out: list[str] = []
    _write(obj, out, "\n", {})
    return "".join(out)

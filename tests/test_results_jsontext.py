"""ibemu.results.jsontext: the text is json.dumps(clean(obj), sort_keys=True, indent=2), byte for byte."""
from __future__ import annotations

import dataclasses
import enum
import json
import math

import numpy as np

from ibemu.results.jsontext import clean, dumps


def reference(obj: object) -> str:
    return json.dumps(clean(obj), sort_keys=True, indent=2)


@dataclasses.dataclass
class Point:
    x: float
    tags: tuple[str, ...]


class Kind(enum.IntEnum):
    A = 3


def test_every_kind_of_value_as_the_standard_library_writes_it():
    obj = {
        "b": [1, 2.5, -0.0, 1e-05, 1.23456789012e20, math.nan, math.inf, -math.inf, None, True, False],
        "a": {"nested": {"deep": [[], {}, [[]], {"x": {}}]}, "empty": "", "é": "ünïcode \"q\" \\ \n\t"},
        3: "int key", 1.5: "float key", None: "none key", ("t", 1): "tuple key",
        "np": [np.int64(7), np.float64(0.1), np.float32(0.1), np.bool_(True), np.array([1.5, 2]),
               np.array(4), np.arange(3).reshape(3, 1), np.uint8(255)],
        "dc": Point(0.30000000000000004, ("p", "q")),
        "enum": Kind.A, "set": {1, 2}, "type": Point, "tuple": (1, (2, 3)),
        "big": 2**70, "neg": -12345678901234567890.0,
    }
    assert dumps(obj) == reference(obj)


def test_top_level_scalars_and_empty_containers():
    for obj in (1, 2.0, math.nan, "s", None, True, [], {}, (), np.float64(3.25), [[]], [{}]):
        assert dumps(obj) == reference(obj), obj


def test_random_nested_values():
    rng = np.random.default_rng(7)

    def value(depth: int) -> object:
        k = int(rng.integers(0, 8 if depth < 4 else 5))
        if k == 0:
            return float(rng.normal() * 10.0 ** int(rng.integers(-12, 12)))
        if k == 1:
            return int(rng.integers(-10**9, 10**9))
        if k == 2:
            return "".join(chr(int(c)) for c in rng.integers(32, 0x3000, int(rng.integers(0, 6))))
        if k == 3:
            return [None, True, False][int(rng.integers(0, 3))]
        if k == 4:
            return np.float64(rng.normal())
        if k == 5:
            return [value(depth + 1) for _ in range(int(rng.integers(0, 5)))]
        if k == 6:
            return {str(rng.integers(0, 50)): value(depth + 1) for _ in range(int(rng.integers(0, 5)))}
        return tuple(value(depth + 1) for _ in range(int(rng.integers(0, 3))))

    for _ in range(300):
        obj = value(0)
        assert dumps(obj) == reference(obj)


class Name(str):
    pass


def test_containers_of_plain_scalars_and_dicts_of_the_same_keys_as_the_standard_library_writes_them():
    """The containers written in one string (plain scalars only) and the ones that are
    not (a subclass, a non-str key, a nested container) at every depth, with the float
    edge values: rounded to 9 digits, -0.0 as 0.0, non-finite as null; dicts of the same
    keys (in any order, at several depths, with a "%" in a key) sharing their form."""
    floats = [0.0, -0.0, 1 / 3, math.nan, math.inf, -math.inf, 1e-7, 123456.5, 1e300, 5e-324, 0.1 + 0.2,
              -1e-5, 1e16, 123456789.5]
    cases = [
        {"port%d" % i: {"PortXmitData": i * 7, "PortRcvPkts": -i, "big": 2**70 + i, "z%s%%": i}
         for i in range(5)},
        {"port%d" % i: {"PortXmitData": i * 7, "ok": i % 2 == 0, "none": None, "s": "é\n"} for i in range(5)},
        {"links": {"a->b": {"bytes": 10, "utilization": f, "capacity": None}} for f in floats},
        {"list": floats, "tuple": tuple(floats), "strs": ["a", "é", "\"q\"\n", ""], "mixed": [1, "x", None, 2.5],
         "ints": list(range(-3, 30)), "one": {"k": 1}, "one_f": {"k": -0.0}, "one_c": {"k": [1]}},
        {"sub": {"k": Name("v")}, "subkey": {Name("k"): 1}, "intkey": {3: 1.5, "3x": 2}, "enum": {"k": Kind.A},
         "np": {"k": np.int64(3)}, "nested": {"a": [1, [2]], "b": {"c": {}}}, "bool": [True, False],
         "np_list": [np.float64(0.5), 1], "enum_list": [Kind.A, 1]},
        [{"b": 1, "a": 2}, {"a": 3, "b": 4}, [{"a": 5, "b": 6}], {"x": {"a": 7, "b": 8}}, {"a": {"b": 1}, "b": 2}],
        [[], {}, [1], {"z": 1, "a": 2, "m": 3}, [[[0.25]]]],
    ]
    for obj in cases:
        assert dumps(obj) == reference(obj)

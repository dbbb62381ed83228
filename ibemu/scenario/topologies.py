"""Fat-tree topology generators (issue 15 Deliver 1): pure functions that write the raw
scenario sections of a fabric (``switch``, ``hca``, ``link`` lists and, for LMC > 0, a
``routing`` table: the dict shape of a TOML file), and the template expanders that check
their parameters (:mod:`ibemu.scenario.templates` registers them).

Topologies (REFERENCE-FABRICS §5):

- XGFT(h; m1..mh; w1..wh), the extended generalized fat tree (Öhring, Ibel, Das, Kumar,
  IPPS 1995): prod(m) hosts; a level-i switch has m_i children and w_{i+1} parents; level i
  holds N_i = prod_{j>i} m_j * prod_{j<=i} w_j nodes.  A node of level i is labelled with
  the digits (x_h..x_{i+1}, y_i..y_1), x_j < m_j, y_j < w_j; a node of level i and one of
  level i+1 are linked iff all their digits but digit i+1 agree (x_{i+1} is the child's,
  y_{i+1} the parent's).  Slimmed (oversubscribed) where w_{i+1} < m_i.  Hosts have one
  port here (an HCA), so w1 = 1.
- the k-ary n-tree (Petrini & Vanneschi, IPPS 1997) = XGFT(n; k..k; 1,k..k): k^n hosts,
  n*k^(n-1) switches of 2k ports (roots: k).
- the two-level fat tree of radix-r switches: a leaf has r/2 hosts and r/2 uplinks, one to
  each of the r/2 spines; at most r leaves (r = 36: 648 hosts) = XGFT(2; r/2, leaves; 1, r/2).
- leaf-spine with a chosen oversubscription (down:up at a leaf, e.g. 24 hosts, 12 up = 2:1,
  REFERENCE-FABRICS §5): every leaf has ``uplinks / spines`` parallel links to every spine.

Naming, LIDs and ports (docs/fabrics.md): hosts ``h0..h{N-1}`` in label order (hosts
of one leaf are consecutive), base LID ``(i+1) * 2^lmc``; switches ``sw<level>_<index>``
(XGFT, k-ary n-tree) or leaves ``L<i>`` and spines ``S<i>`` (two-level trees).  A switch's
down ports come first, 1..m (port = child digit + 1), then its up ports (m+1.. ,
parent digit + 1 + m); the HCA port is 1 (IBA: switch port 0 is management).  A link
goes child -> parent: ``a`` is the lower end, so a->b is ``up<i>`` and b->a ``down<i>``
(level i: host-leaf links are level 1).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..units import format_time, parse_rate, parse_time
from ..validate import suggest

__all__ = ["TemplateParamError", "param_int", "MAX_LMC", "MAX_PORTS", "MAX_UNICAST_LID", "host_name", "host_lid",
           "xgft_counts", "xgft_sections", "kary_ntree_sections", "fat_tree2_sections", "leaf_spine_sections",
           "check_xgft", "expand_xgft", "expand_kary_ntree", "expand_fat_tree2", "expand_leaf_spine",
           "TOPOLOGY_TEMPLATES"]

MAX_LMC = 7                 # IBA PortInfo:LMC is 3 bits (2^7 = 128 LIDs per port)
MAX_PORTS = 254             # IBA: switch ports 1..254 (0 is management, 255 reserved)
MAX_UNICAST_LID = 0xBFFF    # IBA 4.1.3: unicast LIDs 0x0001..0xBFFF


class TemplateParamError(ValueError):
    """A bad template parameter: ``key`` (None: unknown template) and ``reason``."""

    def __init__(self, key: str | None, reason: str):
        super().__init__(reason)
        self.key, self.reason = key, reason


def host_name(i: int) -> str:
    """The name of host (HCA) *i*: ``h<i>``."""
    return "h%d" % i


def host_lid(i: int, lmc: int = 0) -> int:
    """The base LID of host *i*: ``(i+1) * 2^lmc`` (aligned, as IBA 7.11.1 wants a base
    LID with its LMC low bits zero)."""
    return (i + 1) << lmc


# ---------------------------------------------------------------- generators

def _prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _per_level(v: Any, h: int) -> list[Any]:
    """One value for every level 1..h: a list of h, or a single value for all."""
    if v is None:
        return [None] * h
    return list(v) if isinstance(v, (list, tuple)) else [v] * h


def _link(a: str, b: str, level: int, rate: Any, prop: Any) -> dict[str, Any]:
    ln: dict[str, Any] = {"a": a, "b": b, "levels": ["up%d" % level, "down%d" % level]}
    if rate is not None:
        ln["rate"] = rate
    if prop is not None:
        ln["propagation"] = prop
    return ln


def _hosts(n: int, lmc: int) -> list[dict[str, Any]]:
    return [{"name": host_name(i), "lid": host_lid(i, lmc)} for i in range(n)]


def _finish(gen: dict[str, Any], lmc: int) -> dict[str, Any]:
    if lmc:
        gen["routing"] = {"lmc": lmc}
    return gen


def _sw_name(level: int, index: int) -> str:
    return "sw%d_%d" % (level, index)


def xgft_counts(m: Sequence[int], w: Sequence[int]) -> list[int]:
    """Nodes per level 0..h of XGFT(h; m; w): N_i = prod_{j>i} m_j * prod_{j<=i} w_j."""
    return [_prod(w[:i]) * _prod(m[i:]) for i in range(len(m) + 1)]


def xgft_sections(m: Sequence[int], w: Sequence[int], *, lmc: int = 0, rates: Any = None,
                  propagations: Any = None, switch_name: Callable[[int, int], str] = _sw_name,
                  radix: int | None = None) -> dict[str, Any]:
    """Raw sections of XGFT(h; m1..mh; w1..wh), h = len(m) = len(w), w1 = 1 (parameters
    assumed valid: see :func:`check_xgft`).  Node *index* at level i is its label
    (x_h..x_{i+1}, y_i..y_1) read as a mixed-radix number, y_1 the lowest digit;
    *switch_name(level, index)* names switches; *radix*: the switches' ``ports``
    (None: as many as links attach); *rates*, *propagations*: one value, or one per
    level 1..h (None: ``[defaults.link]``)."""
    h = len(m)
    rate, prop = _per_level(rates, h), _per_level(propagations, h)
    # radices of a level-i label, lowest digit first: (w_1..w_i, m_{i+1}..m_h)
    radices = [list(w[:i]) + list(m[i:]) for i in range(h + 1)]
    count = xgft_counts(m, w)
    gen: dict[str, Any] = {"switch": [], "hca": _hosts(count[0], lmc), "link": []}
    for lvl in range(1, h + 1):
        for j in range(count[lvl]):
            sw: dict[str, Any] = {"name": switch_name(lvl, j)}
            if radix is not None:
                sw["ports"] = radix
            gen["switch"].append(sw)

    def name(lvl: int, j: int) -> str:
        return host_name(j) if lvl == 0 else switch_name(lvl, j)

    for lvl in range(1, h + 1):          # links between level lvl-1 (child) and lvl (parent)
        r = radices[lvl - 1]
        low = _prod(r[:lvl - 1])         # digits below digit lvl: y_1..y_{lvl-1}
        mc, wp = m[lvl - 1], w[lvl - 1]  # the digit that differs: child x_lvl < m_lvl, parent y_lvl < w_lvl
        child_up = m[lvl - 2] if lvl >= 2 else 0    # a child switch's down ports come first
        for c in range(count[lvl - 1]):
            lo, x, hi = c % low, (c // low) % mc, c // (low * mc)
            for y in range(wp):
                p = (hi * wp + y) * low + lo     # same digits, y_lvl in place of x_lvl
                a = name(lvl - 1, c) + ":%d" % (1 if lvl == 1 else child_up + y + 1)
                b = name(lvl, p) + ":%d" % (x + 1)
                gen["link"].append(_link(a, b, lvl, rate[lvl - 1], prop[lvl - 1]))
    return _finish(gen, lmc)


def kary_ntree_sections(k: int, n: int, **kw: Any) -> dict[str, Any]:
    """Raw sections of the k-ary n-tree = XGFT(n; k..k; 1,k..k) (REFERENCE-FABRICS §5)."""
    return xgft_sections([k] * n, [1] + [k] * (n - 1), **kw)


def _two_level_name(level: int, index: int) -> str:
    return ("L%d" if level == 1 else "S%d") % index


def fat_tree2_sections(radix: int, leaves: int | None = None, **kw: Any) -> dict[str, Any]:
    """Raw sections of the two-level fat tree of radix-*radix* switches: *leaves* leaves
    (default radix) L0.. of radix/2 hosts and radix/2 uplinks, radix/2 spines S0.., one
    link from every leaf to every spine (radix 36: 36 x 18 = 648 hosts)."""
    half = radix // 2
    return xgft_sections([half, radix if leaves is None else leaves], [1, half],
                         switch_name=_two_level_name, radix=radix, **kw)


def leaf_spine_sections(leaves: int, hosts_per_leaf: int, spines: int, uplinks: int | None = None, *,
                        lmc: int = 0, rates: Any = None, propagations: Any = None) -> dict[str, Any]:
    """Raw sections of a leaf-spine fabric: leaves L0.. with *hosts_per_leaf* hosts each
    (down ports 1..hosts_per_leaf) and *uplinks* up ports (default: *spines*), uplink u
    (port hosts_per_leaf + 1 + u) to spine S<u mod spines>; spine s's port for leaf l's
    j-th link to it (j = u div spines) is l * (uplinks / spines) + j + 1; parallel links
    (uplinks > spines) are named ``L<l>-S<s>-<j>`` (labels in results: that and
    ``L<l>-S<s>-<j>.rev``).  Oversubscription hosts_per_leaf : uplinks."""
    up = spines if uplinks is None else uplinks
    par = up // spines
    rate, prop = _per_level(rates, 2), _per_level(propagations, 2)
    gen: dict[str, Any] = {"switch": [{"name": "L%d" % i} for i in range(leaves)]
                           + [{"name": "S%d" % s} for s in range(spines)],
                           "hca": _hosts(leaves * hosts_per_leaf, lmc), "link": []}
    for i in range(leaves * hosts_per_leaf):
        gen["link"].append(_link(host_name(i) + ":1", "L%d:%d" % (i // hosts_per_leaf, i % hosts_per_leaf + 1), 1,
                                 rate[0], prop[0]))
    for leaf in range(leaves):
        for u in range(up):
            s, j = u % spines, u // spines
            ln = _link("L%d:%d" % (leaf, hosts_per_leaf + 1 + u), "S%d:%d" % (s, leaf * par + j + 1),
                       2, rate[1], prop[1])
            if par > 1:                  # parallel links need their own labels
                ln["name"] = "L%d-S%d-%d" % (leaf, s, j)
            gen["link"].append(ln)
    return _finish(gen, lmc)


# ---------------------------------------------------------------- parameters

def param_int(key: str, v: Any, lo: int, hi: int | None = None) -> int:
    """A template's integer parameter in [lo, hi] (hi None: no upper bound)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TemplateParamError(key, "expected an integer, got %r" % (v,))
    if v < lo or (hi is not None and v > hi):
        raise TemplateParamError(key, "must be between %d and %d, got %d" % (lo, hi, v) if hi is not None
                                 else "must be at least %d, got %d" % (lo, v))
    return v


def _int_list(key: str, v: Any, lo: int, hi: int) -> list[int]:
    if not isinstance(v, list) or not v:
        raise TemplateParamError(key, "expected a non-empty array of integers, got %r" % (v,))
    return [param_int("%s[%d]" % (key, i), x, lo, hi) for i, x in enumerate(v)]


def _levels_value(key: str, v: Any, h: int, conv: Callable[[Any], int], fmt: Callable[[Any, int], Any]
                  ) -> Any:
    """A per-level parameter: one value for every level, or an array of h (levels 1..h)."""
    if isinstance(v, list):
        if len(v) != h:
            raise TemplateParamError(key, "expected one value or %d (one per level 1..%d), got %d" % (h, h, len(v)))
        return [_levels_value("%s[%d]" % (key, i), x, h, conv, fmt) for i, x in enumerate(v)]
    try:
        return fmt(v, conv(v))
    except ValueError as e:
        raise TemplateParamError(key, str(e)) from None


def _propagation(v: Any) -> int:
    t = parse_time(v)
    if t < 0:
        raise ValueError("must not be negative")
    return t


def _common(p: dict[str, Any], h: int, hosts: int, switches: int, size_key: str
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """lmc, rates, propagations: (generator keywords, normalized parameters); checks
    that the hosts' LIDs (2^lmc each) and one per switch fit the unicast LIDs
    (*size_key*: the parameter blamed when they do not)."""
    lmc = param_int("lmc", p.get("lmc", 0), 0, MAX_LMC)
    need = max(((hosts + 1) << lmc) - 1, (hosts << lmc) + switches)    # top host LID; LIDs taken
    if need > MAX_UNICAST_LID:
        raise TemplateParamError("lmc" if lmc and (hosts + switches) <= MAX_UNICAST_LID else size_key,
                                 "%d hosts (%d LIDs each, LMC %d) and %d switches need LIDs up to %d, beyond "
                                 "the unicast LIDs 1..%d" % (hosts, 1 << lmc, lmc, switches, need, MAX_UNICAST_LID))
    kw: dict[str, Any] = {"lmc": lmc}
    norm: dict[str, Any] = {"lmc": lmc}
    if p.get("rates") is not None:
        kw["rates"] = norm["rates"] = _levels_value("rates", p["rates"], h, parse_rate, lambda v, _: v)
    if p.get("propagations") is not None:
        kw["propagations"] = norm["propagations"] = _levels_value(
            "propagations", p["propagations"], h, _propagation, lambda _, t: format_time(t))
    return kw, norm


def _known(params: dict[str, Any], allowed: Sequence[str], required: Sequence[str] = ()) -> None:
    for k in params:
        if k not in allowed:
            raise TemplateParamError(k, "unknown key" + suggest(k, ["name", *allowed]))
    for k in required:
        if k not in params:
            raise TemplateParamError(k, "missing (required)")


COMMON = ("lmc", "rates", "propagations")


def _ports(key: str, what: str, n: int) -> None:
    if n > MAX_PORTS:
        raise TemplateParamError(key, "%s would need %d ports (a switch has at most %d)" % (what, n, MAX_PORTS))


def check_xgft(key_m: str, m: list[int], key_w: str, w: list[int]) -> None:
    """XGFT parameters that fit IB: w1 = 1 (an HCA has one port), m_i + w_{i+1} ports per switch."""
    if len(m) != len(w):
        raise TemplateParamError(key_w, "has %d values but %s has %d (one per level)" % (len(w), key_m, len(m)))
    if w[0] != 1:
        raise TemplateParamError(key_w + "[0]", "must be 1: a host (HCA) has one port, so one parent")
    for i in range(len(m)):
        up = w[i + 1] if i + 1 < len(w) else 0
        _ports(key_m + "[%d]" % i, "a level-%d switch (%d down + %d up)" % (i + 1, m[i], up), m[i] + up)


def expand_xgft(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Template ``xgft``: h (optional), m, w (arrays of h), lmc, rates, propagations."""
    _known(params, ("h", "m", "w") + COMMON, ("m", "w"))
    m = _int_list("m", params["m"], 1, MAX_PORTS)
    w = _int_list("w", params["w"], 1, MAX_PORTS)
    if "h" in params:
        h = param_int("h", params["h"], 1, 16)
        if len(m) != h:
            raise TemplateParamError("m", "has %d values but h = %d" % (len(m), h))
    check_xgft("m", m, "w", w)
    kw, norm = _common(params, len(m), _prod(m), sum(xgft_counts(m, w)[1:]), "m")
    return xgft_sections(m, w, **kw), {"h": len(m), "m": m, "w": w, **norm}


def expand_kary_ntree(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Template ``kary_ntree``: k (2..127: 2k ports), n (levels, >= 1), lmc, rates, propagations."""
    _known(params, ("k", "n") + COMMON, ("k", "n"))
    k = param_int("k", params["k"], 2, MAX_PORTS // 2)
    n = param_int("n", params["n"], 1, 16)
    kw, norm = _common(params, n, k ** n, n * k ** (n - 1), "n")
    return kary_ntree_sections(k, n, **kw), {"k": k, "n": n, **norm}


def expand_fat_tree2(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Template ``fat_tree2``: radix (even, 4..254), leaves (1..radix, default radix),
    lmc, rates, propagations."""
    _known(params, ("radix", "leaves") + COMMON, ("radix",))
    r = param_int("radix", params["radix"], 4, MAX_PORTS)
    if r % 2:
        raise TemplateParamError("radix", "must be even (half the ports down, half up), got %d" % r)
    leaves = param_int("leaves", params.get("leaves", r), 1, r)
    kw, norm = _common(params, 2, leaves * r // 2, leaves + r // 2, "leaves")
    return fat_tree2_sections(r, leaves, **kw), {"radix": r, "leaves": leaves, **norm}


def expand_leaf_spine(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Template ``leaf_spine``: leaves, hosts_per_leaf, spines, and either uplinks (per leaf,
    a multiple of spines; default spines) or oversubscription (hosts_per_leaf / uplinks, e.g.
    2 for 2:1); lmc, rates, propagations."""
    _known(params, ("leaves", "hosts_per_leaf", "spines", "uplinks", "oversubscription") + COMMON,
           ("leaves", "hosts_per_leaf", "spines"))
    leaves = param_int("leaves", params["leaves"], 1, MAX_PORTS)
    hpl = param_int("hosts_per_leaf", params["hosts_per_leaf"], 1, MAX_PORTS - 1)
    spines = param_int("spines", params["spines"], 1, MAX_PORTS)
    if "uplinks" in params and "oversubscription" in params:
        raise TemplateParamError("oversubscription", "conflicts with uplinks; set only one")
    if "oversubscription" in params:
        r = params["oversubscription"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r <= hpl:
            raise TemplateParamError("oversubscription", "expected a number in (0, hosts_per_leaf = %d], got %r"
                                     % (hpl, r))
        up_f = hpl / r
        up = round(up_f)
        if abs(up_f - up) > 1e-9 * max(1.0, up_f):
            raise TemplateParamError("oversubscription", "%d hosts per leaf / %r is not a whole number of uplinks"
                                     % (hpl, r))
        key = "oversubscription"
    else:
        up = param_int("uplinks", params.get("uplinks", spines), 1, MAX_PORTS)
        key = "uplinks"
    if up % spines:
        raise TemplateParamError(key, "%d uplinks per leaf do not spread evenly over %d spines" % (up, spines))
    _ports(key, "a leaf (%d hosts + %d up)" % (hpl, up), hpl + up)
    _ports("leaves", "a spine (%d leaves x %d links)" % (leaves, up // spines), leaves * (up // spines))
    kw, norm = _common(params, 2, leaves * hpl, leaves + spines, "leaves")
    return (leaf_spine_sections(leaves, hpl, spines, up, **kw),
            {"leaves": leaves, "hosts_per_leaf": hpl, "spines": spines, "uplinks": up, **norm})


Expander = Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]
TOPOLOGY_TEMPLATES: dict[str, Expander] = {
    "kary_ntree": expand_kary_ntree, "xgft": expand_xgft, "fat_tree2": expand_fat_tree2,
    "leaf_spine": expand_leaf_spine}

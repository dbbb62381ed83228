"""Source response functions FIMD, LIPD and AIMD (seed 003 §6.1–6.2) and the global
tables that drive them (seed 000 §5.1.3, "Figure 2 Source Response Function
Implementation Template").

Rates are fractions of the source link rate Rmax (so Rmax = 1) and time is counted in
packet times at Rmax (a packet at rate r is followed by the next after 1/r).  Rmin =
Rmax/levels (levels = 256: the IBA IPD range, seed 003 §6.2) and T = 1/Rmin.

Each function is given by its decrease function ``dec(r)`` (one mark) and the increase
curve F(t) from Rmin (seed 003 eq. 1–2, a flow returns to its rate before a mark in the
constant time T), with its inverse ``tau(r)`` (the time on the curve at which rate r is
reached):

- FIMD: dec(r) = max(r/m, Rmin), F(t) = Rmin·m^(t/T);
- LIPD: dec(r) = max(1/(1/r + 1), Rmin) (IPD + 1), F(t) = 1/(1/Rmin − t/T);
- AIMD: dec(r) = max(r/m, Rmin), F(t) = Rmin + (m−1)·Rmin²·t (linear in time).

Continuous rates: each unmarked ACK moves the flow along F by the time it nominally took,
1/r: ``inc(r) = min(F(tau(r) + 1/r), Rmax)`` (seed 003: f_inc(r) = F^r(1/r)).

Discrete rates (IPD 0..levels−1, rate 1/(IPD+1); seed 003 §6.3.1): :class:`RateTable`
holds the conceptual tables of seed 000 §5.1.3 — next IPD on a decrease, next IPD on an
increase, and RPI, the number of unmarked ACKs (in reference packets) the flow waits at
an IPD before that increase.  They are derived from the same F so that the time spent
between two levels equals the time F takes between their rates.
"""
from __future__ import annotations

import math
from typing import ClassVar

EPS = 1e-9


class ResponseFunction:
    """Base class: *levels* gives Rmin = 1/levels, T = levels."""
    name: ClassVar[str] = "?"

    def __init__(self, levels: int = 256, m: float = 2.0) -> None:
        self.levels = levels
        self.rmin = 1.0 / levels
        self.T = float(levels)
        self.m = m

    def dec(self, r: float) -> float:
        raise NotImplementedError

    def F(self, t: float) -> float:
        raise NotImplementedError

    def tau(self, r: float) -> float:
        raise NotImplementedError

    def inc(self, r: float, step: float | None = None) -> float:
        """The rate after one unmarked ACK at rate *r*; *step* is the time on the curve one
        ACK is worth (default 1/r, seed 003 §6.2)."""
        if r >= 1.0:
            return 1.0
        t = self.tau(r) + (1.0 / r if step is None else step)
        if t >= self.recovery_time():
            return 1.0
        return min(self.F(t), 1.0)

    def recovery_time(self) -> float:
        """T_rec = tau(Rmax): time from Rmin to Rmax in packet times (seed 003 Fig. 6)."""
        return self.tau(1.0)

    def __repr__(self) -> str:
        return "%s(levels=%d, m=%g)" % (self.name, self.levels, self.m)


class FIMD(ResponseFunction):
    """Fast Increase Multiplicative Decrease (seed 003 §6.2)."""
    name = "fimd"

    def dec(self, r: float) -> float:
        return max(r / self.m, self.rmin)

    def F(self, t: float) -> float:
        growth: float = self.m ** (t / self.T)      # float ** float is typed Any
        return self.rmin * growth

    def tau(self, r: float) -> float:
        return self.T * math.log(r / self.rmin, self.m)


class LIPD(ResponseFunction):
    """Linear Inter-Packet Delay: a mark adds one to the IPD (seed 003 §6.2)."""
    name = "lipd"

    def dec(self, r: float) -> float:
        return max(1.0 / (1.0 / r + 1.0), self.rmin)

    def F(self, t: float) -> float:
        return 1.0 / (1.0 / self.rmin - t / self.T)

    def tau(self, r: float) -> float:
        return self.T * (1.0 / self.rmin - 1.0 / r)


class AIMD(ResponseFunction):
    """Additive Increase Multiplicative Decrease with the slope (m−1)·Rmin² that makes a
    flow at Rmin recover in one ACK (seed 003 §6.2)."""
    name = "aimd"

    def dec(self, r: float) -> float:
        return max(r / self.m, self.rmin)

    def F(self, t: float) -> float:
        return self.rmin + (self.m - 1.0) * self.rmin ** 2 * t

    def tau(self, r: float) -> float:
        return (r - self.rmin) / ((self.m - 1.0) * self.rmin ** 2)


FUNCTIONS: dict[str, type[ResponseFunction]] = {"fimd": FIMD, "lipd": LIPD, "aimd": AIMD}


def make_function(name: str, levels: int = 256, m: float = 2.0) -> ResponseFunction:
    return FUNCTIONS[name](levels, m)


def ipd_rate(ipd: int) -> float:
    return 1.0 / (ipd + 1)


class RateTable:
    """The discrete tables of seed 000 §5.1.3 for a response function, indexed by CIPD:

    - ``dec[ipd]``: CIPD after a decrease: the IPD nearest to dec(rate), at least ipd+1
      (a mark always lowers the rate) and at most levels−1;
    - ``inc[ipd]``: CIPD after an increase: the lowest IPD whose rate one ACK at the
      current rate reaches on F (several levels at once at low rates, as FIMD and AIMD
      need for the responsiveness principle), else ipd−1;
    - ``rpi[ipd]``: unmarked ACKs (of reference packets) needed before that increase:
      the time F takes from rate(ipd) to rate(inc[ipd]) times rate(ipd), rounded, at
      least 1 (on the path from Rmin the rounding is carried from level to level);
      at IPD 0, which has no level above, the ACKs (at the rate one mark leaves) that F
      takes from that rate back to Rmax: what a flow at Rmax holds in RPI when marked.
    """

    def __init__(self, fn: ResponseFunction) -> None:
        self.fn = fn
        n = fn.levels
        self.dec = [0] * n
        self.inc = [0] * n
        self.rpi = [1] * n
        for ipd in range(n):
            r = ipd_rate(ipd)
            self.dec[ipd] = min(n - 1, max(ipd + 1, round(1.0 / fn.dec(r) - 1.0)))
            if ipd:
                self._level(ipd, 0.0)
        # along the recovery path from Rmin, carry the rounding so that the whole climb
        # takes F's time (error diffusion; the other levels keep their own rounding)
        carry, ipd = 0.0, n - 1
        while ipd > 0:
            carry = self._level(ipd, carry)
            ipd = self.inc[ipd]
        # IPD 0 (Rmax) has no level above it, but a flow there still reloads RPI from this
        # table (seed 000 §5.1.3.1 step 2, see HPResponse) and keeps it through a mark
        # (§5.1.3.2): the unmarked ACKs, at the rate one mark leaves, that F takes back to Rmax
        top = self.dec[0]
        self.rpi[0] = round_rpi((fn.tau(1.0) - fn.tau(ipd_rate(top))) / (top + 1))

    def _level(self, ipd: int, carry: float) -> float:
        """Fill inc[ipd] and rpi[ipd]; *carry* is the time already spent beyond F's
        schedule; returns the new carry."""
        fn = self.fn
        unit = ipd + 1                                  # packet times per ACK at this IPD
        t0 = fn.tau(ipd_rate(ipd))
        need = fn.tau(ipd_rate(ipd - 1)) - t0 - carry
        if need <= unit * (1 + EPS):                     # one ACK reaches further
            best = ipd - 1
            for k in range(ipd - 2, -1, -1):
                if fn.tau(ipd_rate(k)) - t0 - carry <= unit * (1 + EPS):
                    best = k
                else:
                    break
            rpi = 1
        else:
            best, rpi = ipd - 1, round_rpi(need / unit)
        self.inc[ipd], self.rpi[ipd] = best, rpi
        return carry + rpi * unit - (fn.tau(ipd_rate(best)) - t0)

    def recovery_time(self) -> float:
        """Time (packet times) to climb from the lowest rate to Rmax with unmarked ACKs,
        RPI ACKs at each level, each taking 1/rate."""
        t, ipd = 0.0, self.fn.levels - 1
        while ipd > 0:
            t += self.rpi[ipd] * (ipd + 1)
            ipd = self.inc[ipd]
        return t


def round_rpi(x: float) -> int:
    """RPI is a whole number of packets, at least one."""
    return max(1, math.floor(x + 0.5))


class WindowTable:
    """CWND tables (seed 000 §5.1.3): +1 after CWND unmarked ACKs (one window's worth),
    halved (at least 1) on a decrease.  The seeds leave the window functions open; seed
    003 keeps CWND = 1."""

    def __init__(self, cwnd_max: int) -> None:
        self.cwnd_max = cwnd_max

    def inc(self, cwnd: int) -> int:
        return min(cwnd + 1, self.cwnd_max)

    def dec(self, cwnd: int) -> int:
        return max(1, cwnd // 2)

    def rpi(self, cwnd: int) -> int:
        return cwnd

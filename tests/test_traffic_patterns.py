"""Traffic patterns (issue 15 Deliver 4): each pattern's defining property, seeded
determinism, Poisson arrivals and message-size distributions, the one-line errors of
[[traffic]] tables, and a short run of a [[traffic]] scenario."""
import random
import zlib
from collections import Counter
from itertools import permutations as all_orders

import pytest

from ibemu.fabric.params import FlowSpec, SizeDist
from ibemu.fabric.traffic import MessageSizes, Poisson, make_generator
from ibemu.run import run_virtual
from ibemu.scenario.read import scenario_from_dict
from ibemu.scenario.patterns import (PatternError, all_to_all, bit_complement, bit_reversal, bystanders,
                                     flow_names, hotspot, pairs, permutation, shift, uniform)
from ibemu.scenario.traffic import expand_traffic
from ibemu.units import PS_PER_MS, PS_PER_S, PS_PER_US, ib_rate
from ibemu.validate import ScenarioError

H8 = ["h%d" % i for i in range(8)]
H16 = ["n%02d" % i for i in range(16)]


def as_map(prs):
    m = dict(prs)
    assert len(m) == len(prs), "a source sends more than one flow"
    return m


# ---------------------------------------------------------------- the patterns

@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
def test_permutation_is_a_derangement(n):
    hosts = ["x%d" % i for i in range(n)]
    for seed in range(30):
        m = as_map(permutation(hosts, seed))
        assert sorted(m) == sorted(hosts) and sorted(m.values()) == sorted(hosts)    # a bijection
        assert all(s != d for s, d in m.items())                                       # no fixed point


def test_permutation_draws_every_derangement():
    """Of 4 hosts there are 9 derangements (!4 = 9): all of them come up, none other."""
    hosts = ["a", "b", "c", "d"]
    derangements = {p for p in all_orders(range(4)) if all(i != j for i, j in enumerate(p))}
    assert len(derangements) == 9
    seen = Counter(tuple(hosts.index(d) for _, d in permutation(hosts, seed)) for seed in range(900))
    assert set(seen) == derangements
    assert min(seen.values()) > 50          # ~100 each if uniform; a biased draw falls far below


@pytest.mark.parametrize("k", [1, 3, 7, -1, 9])
def test_shift(k):
    m = as_map(shift(H8, k))
    for i, h in enumerate(H8):
        assert m[h] == H8[(i + k) % 8]
    assert sorted(m.values()) == H8


def test_shift_by_a_multiple_of_n_is_refused():
    with pytest.raises(PatternError) as e:
        shift(H8, 16)
    assert e.value.key == "k"


def test_bit_reversal():
    m = as_map(bit_reversal(H16))
    for i in range(16):
        rev = sum(((i >> b) & 1) << (3 - b) for b in range(4))
        if rev == i:                                    # palindromes 0000, 0110, 1001, 1111 ...
            assert H16[i] not in m
        else:
            assert m[H16[i]] == H16[rev]
    assert sorted(h for h in H16 if h not in m) == ["n00", "n06", "n09", "n15"]
    assert all(m[m[s]] == s for s in m)                 # an involution


def test_bit_complement():
    m = as_map(bit_complement(H8))
    for i in range(8):
        assert m[H8[i]] == H8[7 - i]                    # 3 bits complemented: 7 - i
        assert m[m[H8[i]]] == H8[i]
    assert all(s != d for s, d in m.items())


@pytest.mark.parametrize("fn", [bit_reversal, bit_complement])
def test_bit_patterns_need_a_power_of_two(fn):
    with pytest.raises(PatternError, match="power-of-two number of hosts, got 6"):
        fn(H8[:6])


def test_all_to_all():
    prs = all_to_all(H8)
    assert len(prs) == 8 * 7 == len(set(prs))
    assert set(prs) == {(s, d) for s in H8 for d in H8 if s != d}


def test_uniform_never_picks_the_source_and_is_uniform():
    """Chi-square over the 7 possible destinations of each of 8 sources: 48 degrees of
    freedom (mean 48, sd 9.8); a fair draw stays under 48 + 5 sd = 97."""
    per = 2800
    prs = uniform(H8, seed=11, flows_per_host=per)
    assert len(prs) == 8 * per
    assert all(s != d for s, d in prs)
    counts = Counter(prs)
    expect = per / 7
    chi2 = sum((counts[(s, d)] - expect) ** 2 / expect for s in H8 for d in H8 if s != d)
    assert chi2 < 97, chi2
    # the source's own index and its neighbour are not favoured (an off-by-one would double one)
    assert all(abs(counts[(s, d)] - expect) < 6 * (expect ** 0.5) for s in H8 for d in H8 if s != d)


def test_hotspot_fraction_and_background():
    hot = hotspot(H16, seed=5, fraction=0.4, destination="n03")
    senders = [s for s, _ in hot]
    assert all(d == "n03" for _, d in hot)
    assert len(senders) == len(set(senders)) == round(0.4 * 15) == 6
    assert "n03" not in senders
    assert senders == [h for h in H16 if h in senders]          # listed in host order
    rest = bystanders(H16, hot)
    assert len(rest) == 16 - 1 - 6 and not set(rest) & (set(senders) | {"n03"})
    assert hotspot(H16, 5, senders=4, destination=0)[0][1] == "n00"
    assert len(hotspot(H16, 5, senders=4)) == 4
    assert len(hotspot(H16, 5)) == 15                           # default: every other host
    assert len(hotspot(H16, 5, fraction=0.01)) == 1             # at least one sender


def test_determinism():
    for pattern, params in (("uniform", {"flows_per_host": 3}), ("permutation", {}), ("hotspot", {"fraction": 0.5})):
        a = pairs(pattern, H16, 42, **params)
        assert a == pairs(pattern, H16, 42, **params)
        assert a != pairs(pattern, H16, 43, **params)


def test_flow_names():
    assert flow_names("g", [("a", "b"), ("a", "c"), ("a", "b")]) == ["g.a-b", "g.a-c", "g.a-b#2"]


# ---------------------------------------------------------------- [[traffic]] tables

def test_expand_traffic_hotspot_with_background():
    flows = expand_traffic([{"pattern": "hotspot", "fraction": 0.4, "destination": 3,
                             "background": {"pattern": "shift", "k": 2, "window": 4}, "window": 8}], H16, seed=9)
    hot = [f for f in flows if f.group == "hotspot"]
    bg = [f for f in flows if f.group == "background"]
    assert len(hot) == 6 and all(f.dst == "n03" and f.window == 8 for f in hot)
    assert all(f.name == "hotspot.%s-n03" % f.src for f in hot)
    used = {f.src for f in hot} | {"n03"}
    rest = [h for h in H16 if h not in used]
    assert [(f.src, f.dst) for f in bg] == [(h, rest[(i + 2) % len(rest)]) for i, h in enumerate(rest)]
    assert all(f.window == 4 and f.name.startswith("background.") for f in bg)
    again = expand_traffic([{"pattern": "hotspot", "fraction": 0.4, "destination": 3,
                             "background": {"pattern": "shift", "k": 2, "window": 4}, "window": 8}], H16, seed=9)
    assert again == flows
    other = expand_traffic([{"pattern": "hotspot", "fraction": 0.4, "destination": 3}], H16, seed=10)
    assert [f.src for f in other] != [f.src for f in hot]


def test_expand_traffic_flow_keys_and_load():
    """load = 0.25 of a 1 GB/s link with 4 KiB messages: one message per 4096 / 0.25e9 s."""
    flows = expand_traffic([{"pattern": "permutation", "group": "p", "arrival": "poisson", "load": 0.25,
                             "message_size": "4KiB", "sl": 2}], H8, seed=1)
    assert len(flows) == 8 and {f.group for f in flows} == {"p"}
    for f in flows:
        assert (f.pattern, f.message_size, f.sl) == ("poisson", 4096, 2)
        assert f.mean_interarrival == round(4096 * PS_PER_S / (0.25 * ib_rate("4x_sdr")))
    dist = expand_traffic([{"pattern": "shift", "arrival": "poisson", "load": 0.5,
                            "message_size": {"dist": "uniform", "min": 1000, "max": 3000}}], H8)
    assert dist[0].size_dist == SizeDist("uniform", low=1000, high=3000)
    assert dist[0].mean_interarrival == round(2000 * PS_PER_S / (0.5 * ib_rate("4x_sdr")))


def _raw(traffic, flows=()):
    raw = {"scenario": {"name": "t", "duration": "100us"}, "switch": [{"name": "S"}],
           "hca": [{"name": h} for h in H8], "link": [{"a": h, "b": "S"} for h in H8],
           "traffic": traffic}
    if flows:
        raw["flow"] = list(flows)
    return raw


BAD = [
    ({"pattern": "ring"}, "traffic[0].pattern", "unknown value 'ring'"),
    ({"pattern": "shift", "k": 8}, "traffic[0].k", "k mod N must not be 0"),
    ({"pattern": "shift", "k": "two"}, "traffic[0].k", "expected an integer"),
    ({"pattern": "permutation", "k": 2}, "traffic[0].k", "only used with pattern 'shift'"),
    ({"pattern": "bit_reversal", "hosts": H8[:6]}, "traffic[0].hosts", "power-of-two number of hosts, got 6"),
    ({"pattern": "uniform", "hosts": ["h0"]}, "traffic[0].hosts", "at least 2 hosts, got 1"),
    ({"pattern": "uniform", "hosts": ["h0", "S"]}, "traffic[0].hosts[1]", "is a switch"),
    ({"pattern": "uniform", "hosts": ["h0", "h9"]}, "traffic[0].hosts[1]", "unknown node 'h9'"),
    ({"pattern": "uniform", "hosts": ["h0", "h0"]}, "traffic[0].hosts[1]", "listed twice"),
    ({"pattern": "uniform", "flows_per_host": 0}, "traffic[0].flows_per_host", "at least 1"),
    ({"pattern": "all_to_all", "max_flows": 50}, "traffic[0].max_flows", "makes 56 flows, more than max_flows = 50"),
    ({"pattern": "hotspot", "fraction": 1.5}, "traffic[0].fraction", "must be in (0, 1]"),
    ({"pattern": "hotspot", "senders": 8}, "traffic[0].senders", "between 1 and 7"),
    ({"pattern": "hotspot", "senders": 2, "fraction": 0.5}, "traffic[0].senders", "only one of fraction, senders"),
    ({"pattern": "hotspot", "destination": "h8"}, "traffic[0].destination", "not one of the pattern's hosts"),
    ({"pattern": "hotspot", "destination": 8}, "traffic[0].destination", "index 8 is not one of the 8 hosts"),
    ({"pattern": "hotspot", "senders": 6, "background": "permutation"}, "traffic[0].background",
     "at least 2 hosts besides the hot spot and its senders, 1 left"),
    ({"pattern": "hotspot", "senders": 2, "background": "bit_complement"}, "traffic[0].background",
     "power-of-two number of hosts, got 5"),
    ({"pattern": "hotspot", "background": "hotspot"}, "traffic[0].background.pattern", "unknown value 'hotspot'"),
    ({"pattern": "shift", "arrival": "poisson"}, "traffic[0].mean_interarrival", "missing"),
    ({"pattern": "shift", "arrival": "bursty"}, "traffic[0].arrival", "unknown value 'bursty'"),
    ({"pattern": "shift", "arrival": "poisson", "load": 0}, "traffic[0].load", "must be in (0, 1]"),
    ({"pattern": "shift", "load": 0.5}, "traffic[0].load", "only used with pattern 'poisson'"),
    ({"pattern": "shift", "message_size": {"dist": "normal"}}, "traffic[0].message_size.dist", "unknown value"),
    ({"pattern": "shift", "message_size": {"dist": "uniform", "min": 10}}, "traffic[0].message_size.max",
     "missing"),
    ({"pattern": "shift", "message_size": {"dist": "uniform", "min": 10, "max": 5}},
     "traffic[0].message_size.max", "at least min"),
    ({"pattern": "shift", "message_size": {"dist": "exponential", "mean": "4GiB"}},
     "traffic[0].message_size.mean", "between 1 byte and 2GiB"),
    ({"pattern": "shift", "message_size": {"dist": "choice", "values": [1, 2], "weights": [1]}},
     "traffic[0].message_size.weights", "a list of 2 numbers"),
    ({"pattern": "shift", "message_size": {"dist": "choice", "values": []}},
     "traffic[0].message_size.values", "non-empty list"),
    ({"pattern": "shift", "group": "a/b"}, "traffic[0].group", "no path separators"),
    ({"pattern": "shift", "seed": -1}, "traffic[0].seed", "must be between 0 and"),
]


@pytest.mark.parametrize("t,key,reason", BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_bad_traffic_tables(t, key, reason):
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(_raw([t]), label="t.toml")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("t.toml: %s: " % key), msg
    assert reason in msg, msg


def test_traffic_names_clash_with_flows_and_each_other():
    with pytest.raises(ScenarioError, match=r"traffic\[0\]\.group: flow name 'shift.h0-h1' made twice "
                                            r"\(also flow\[0\]\)"):
        scenario_from_dict(_raw([{"pattern": "shift"}], [{"name": "shift.h0-h1", "src": "h0", "dst": "h1"}]))
    with pytest.raises(ScenarioError, match=r"traffic\[1\]\.group: .* made twice \(also traffic\[0\]\)"):
        scenario_from_dict(_raw([{"pattern": "shift"}, {"pattern": "shift"}]))
    scn = scenario_from_dict(_raw([{"pattern": "shift"}, {"pattern": "shift", "k": 2, "group": "s2"}]))
    assert len(scn.flows) == 16


def test_unreachable_hosts_are_refused():
    raw = _raw([{"pattern": "all_to_all"}])
    raw["switch"].append({"name": "T"})
    raw["hca"].append({"name": "lone"})
    raw["link"].append({"a": "lone", "b": "T"})
    with pytest.raises(ScenarioError, match=r"traffic\[0\]\.hosts: 'lone' cannot be reached from 'h0'"):
        scenario_from_dict(raw)


def test_flow_key_errors_in_flow_tables():
    raw = _raw([])
    raw["flow"] = [{"src": "h0", "dst": "h1", "pattern": "poisson", "mean_interarrival": "1us", "load": 0.5}]
    with pytest.raises(ScenarioError, match=r"flow\[0\]\.load: give only one of mean_interarrival, load"):
        scenario_from_dict(raw)
    raw["flow"] = [{"src": "h0", "dst": "h1", "pattern": "poisson", "mean_interarrival": "2us",
                    "message_size": {"dist": "choice", "values": ["1KiB", 4096], "weights": [3, 1]}}]
    f = scenario_from_dict(raw).flows[0]
    assert (f.mean_interarrival, f.size_dist.values, f.size_dist.weights) == (2 * PS_PER_US, [1024, 4096], [3, 1])


# ---------------------------------------------------------------- arrivals and sizes

def test_poisson_arrivals_mean_interarrival():
    """20,000 expected arrivals: their count is within 5 sd (5 x sqrt(20000) = 707) and
    the mean gap within 4 %; the backlog holds every arrival not taken."""
    mean = 3 * PS_PER_US
    horizon = 20_000 * mean
    g = Poisson(0, None, mean, seed=7, name="f")
    ok, t = g.next_message(0)
    assert not ok and 0 < t
    ok, _ = g.next_message(horizon)
    assert ok
    assert abs(g.arrivals - 20_000) < 707
    assert abs(horizon / g.arrivals - mean) < 0.04 * mean
    assert g.backlog == g.arrivals
    for _ in range(5):
        g.taken()
    assert g.backlog == g.arrivals - 5
    # the gaps: exponential (about 1/e of them longer than the mean)
    h = Poisson(0, None, mean, seed=8, name="f")
    times = []
    for _ in range(5000):
        _, t = h.next_message(times[-1] if times else 0)
        times.append(t)
        h.next_message(t)
        h.taken()
    gaps = [b - a for a, b in zip(times, times[1:])]
    longer = sum(x > mean for x in gaps) / len(gaps)
    assert abs(longer - 0.3679) < 0.03
    assert Poisson(0, None, mean, 7, "f").next_message(0) == Poisson(0, None, mean, 7, "f").next_message(0)
    assert Poisson(0, None, mean, 7, "f").next_message(0) != Poisson(0, None, mean, 7, "g").next_message(0)


def test_poisson_stops_at_stop():
    g = Poisson(0, 10 * PS_PER_US, PS_PER_US, 1, "f")
    assert g.next_message(10 * PS_PER_US) == (False, None)
    assert g.arrivals == 0                  # nothing counted at or after stop


def test_size_distributions_sample_means():
    n = 20_000
    rng = random.Random(3)
    exp = MessageSizes(SizeDist("exponential", mean=4096.0), rng)
    xs = [exp.draw() for _ in range(n)]
    assert abs(sum(xs) / n - 4096) < 5 * 4096 / n ** 0.5 and min(xs) >= 1
    uni = MessageSizes(SizeDist("uniform", low=100, high=1000), rng)
    xs = [uni.draw() for _ in range(n)]
    assert min(xs) == 100 and max(xs) == 1000
    assert abs(sum(xs) / n - 550) < 5 * (900 / 12 ** 0.5) / n ** 0.5
    ch = MessageSizes(SizeDist("choice", values=[512, 4096, 9000], weights=[3, 1, 0]), rng)
    c = Counter(ch.draw() for _ in range(n))
    assert set(c) == {512, 4096}                                    # weight 0: never
    assert abs(c[512] / n - 0.75) < 5 * (0.75 * 0.25 / n) ** 0.5
    capped = MessageSizes(SizeDist("exponential", mean=1000.0, low=200, high=1500), rng)
    xs = [capped.draw() for _ in range(n)]
    assert min(xs) == 200 and max(xs) == 1500
    assert SizeDist("choice", values=[512, 4096], weights=[3, 1]).mean_size() == 0.75 * 512 + 0.25 * 4096


def test_generator_offers_one_size_per_message():
    """A flow's sizes come from its own stream: (seed << 32) ^ crc32(name + "/size")."""
    f = FlowSpec("f", "a", "b", pattern="messages", count=5, size_dist=SizeDist("uniform", low=1, high=10**6))
    g = make_generator(f, 4)
    first = g.size()
    assert g.size() == first                    # asked again before it is taken: the same
    got = [g.taken()] + [g.taken() for _ in range(4)]
    rng = random.Random((4 << 32) ^ zlib.crc32(b"f/size"))
    assert got == [rng.randint(1, 10**6) for _ in range(5)]
    fixed = make_generator(FlowSpec("f", "a", "b", message_size=777), 4)
    assert fixed.size() == fixed.taken() == 777


# ---------------------------------------------------------------- runs

def _two_hosts(flow, duration="5ms"):
    return {"scenario": {"name": "p", "duration": duration, "seed": 2}, "switch": [{"name": "S"}],
            "hca": [{"name": "a"}, {"name": "b"}], "link": [{"a": "a", "b": "S"}, {"a": "b", "b": "S"}],
            "flow": [dict(flow, src="a", dst="b", name="f")], "output": {"plots": False}}


def test_poisson_offered_load_in_a_run():
    """load 0.3 of 1 GB/s in 1 KiB messages for 5 ms: about 1465 messages (sd 2.6 %); the
    payload carried is within 4 sd (10.5 %) of 0.3 x rate x duration."""
    scn = scenario_from_dict(_two_hosts({"pattern": "poisson", "load": 0.3, "message_size": "1KiB"}))
    r = run_virtual(scn, progress=False)
    tx = r.summary["flows"]["f"]["tx_bytes"]
    offered = 0.3 * ib_rate("4x_sdr") * 5e-3
    assert abs(tx - offered) < 0.105 * offered, (tx, offered)


def test_poisson_overload_builds_a_backlog():
    """Arrivals at twice the link rate: the link runs full, and the source's backlog holds
    about half of what arrived (the open loop does not slow the arrivals)."""
    mean = 1024 * PS_PER_S // (2 * ib_rate("4x_sdr"))
    scn = scenario_from_dict(_two_hosts({"pattern": "poisson", "mean_interarrival": "%dps" % mean,
                                         "message_size": "1KiB"}, duration="1ms"))
    r = run_virtual(scn, progress=False)
    assert r.summary["links"]["a->S"]["utilization"] > 0.95
    rx_msgs = r.summary["flows"]["f"]["messages"]
    expected_arrivals = PS_PER_MS / mean                        # ~1953
    assert rx_msgs < 0.6 * expected_arrivals                    # the link carries about half


def test_size_distribution_in_a_run():
    """50 RC SEND messages of uniform sizes: the receiver gets exactly the drawn bytes."""
    sizes = random.Random((2 << 32) ^ zlib.crc32(b"f/size"))
    expect = sum(sizes.randint(100, 6000) for _ in range(50))
    scn = scenario_from_dict(_two_hosts({"pattern": "messages", "count": 50,
                                         "message_size": {"dist": "uniform", "min": 100, "max": 6000}},
                                        duration="1ms"))
    r = run_virtual(scn, progress=False)
    fl = r.summary["flows"]["f"]
    assert fl["messages"] == 50 and fl["rx_bytes"] == expect


def test_traffic_scenario_end_to_end(tmp_path):
    """8 hosts on one switch: a hot spot of 3 senders into h7, and a background shift among
    the other 4 hosts (which share no link with the hot spot), for 300 us."""
    raw = _raw([{"pattern": "hotspot", "senders": 3, "destination": "h7", "window": 4,
                 "background": {"pattern": "shift", "k": 1}}])
    raw["scenario"]["duration"] = "300us"
    raw["output"] = {"plots": False, "bin": "50us"}
    scn = scenario_from_dict(raw, label="t.toml")
    hot = [f for f in scn.flows if f.group == "hotspot"]
    bg = [f for f in scn.flows if f.group == "background"]
    assert len(hot) == 3 and len(bg) == 4
    r = run_virtual(scn, out_dir=tmp_path, progress=False)
    s = r.summary
    assert s["links"]["S->h7"]["utilization"] > 0.95                    # the hot spot's last hop is full
    assert abs(s["groups"]["hotspot"]["normalized"] - 1.0) < 0.05       # 3 flows share 1 link
    for f in bg:                                                        # victims-free: each near line rate
        assert s["flows"][f.name]["normalized"] > 0.9
    assert (tmp_path / "results.json").exists()


def test_max_flows_counts_the_background_too():
    t = {"pattern": "hotspot", "senders": 2, "background": {"pattern": "uniform", "flows_per_host": 3}}
    assert len(scenario_from_dict(_raw([dict(t, max_flows=17)])).flows) == 2 + 5 * 3
    with pytest.raises(ScenarioError, match=r"traffic\[0\]\.max_flows: uniform of 5 hosts makes 15 flows "
                                            r"\(and the hot spot 2\), more than max_flows = 16"):
        scenario_from_dict(_raw([dict(t, max_flows=16)]))


def test_exclude_leaves_hosts_out_of_a_table():
    """``exclude`` takes hosts out of the table's hosts (the congestion-tree study keeps
    the DCMS manager's host free), and an unknown name is one line naming the key."""
    from ibemu.scenario import ScenarioError, scenario_from_dict
    raw = {"scenario": {"name": "x", "duration": "10us"}, "switch": [{"name": "S"}],
           "hca": [{"name": "h%d" % i, "lid": i + 1} for i in range(5)],
           "link": [{"a": "h%d" % i, "b": "S"} for i in range(5)],
           "traffic": [{"pattern": "shift", "exclude": ["h4"]}]}
    scn = scenario_from_dict(raw)
    assert sorted((f.src, f.dst) for f in scn.flows) == [("h0", "h1"), ("h1", "h2"), ("h2", "h3"), ("h3", "h0")]
    raw["traffic"][0]["exclude"] = ["h9"]
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(raw)
    assert "traffic[0].exclude[0]" in str(e.value) and "\n" not in str(e.value)

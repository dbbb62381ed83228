"""The table sections of ``ibemu report`` (issue 18 item 3): the scenario with its
resolved configuration, and the summary's flows, groups, links, fairness and counters."""
from __future__ import annotations

import json

from .reader import Results
from .report_elements import esc, html_table, section


def scenario_section(res: Results) -> str:
    d = res.data
    extra = d.get("extra") or {}
    rows = [("scenario", res.scenario), ("seed", res.seed), ("emulated duration (ms)", d.get("duration_ms")),
            ("clock", extra.get("clock", "")), ("source", d.get("source") or ""),
            ("summary window", "%s" % (d["summary"].get("window") or "whole run")),
            ("bin (µs)", d["summary"].get("bin_ps", 0) / 1e6 if d["summary"].get("bin_ps") else None)]
    for key in ("events", "pcap", "core", "valid", "lost"):
        if extra.get(key) is not None:
            rows.append((key, extra[key] if not isinstance(extra[key], (dict, list)) else json.dumps(extra[key])))
    body = html_table(("", "value"), rows)
    cfg = res.path / "config.json"
    if cfg.exists():
        text = json.dumps(json.loads(cfg.read_text(encoding="utf-8")), indent=2, sort_keys=True)
        body += ("<details><summary>resolved configuration (config.json)</summary><pre>%s</pre></details>"
                 % esc(text))
    return section("Scenario", "scenario", body)


def summary_section(res: Results) -> str:
    s = res.summary
    body = []
    flows = s.get("flows") or {}
    rows = []
    for name, f in flows.items():
        lat = f.get("latency") or {}
        rows.append((name, f.get("group") or "", f.get("start_ps", 0) / 1e9, f.get("stop_ps", 0) / 1e9,
                     f.get("throughput_gbps"), f.get("normalized"), f.get("rx_bytes"), f.get("rx_packets"),
                     f.get("messages"), None if lat.get("p50_ps") is None else lat["p50_ps"] / 1e6,
                     None if lat.get("p99_ps") is None else lat["p99_ps"] / 1e6))
    body.append("<h3>Flows</h3>" + html_table(
        ("flow", "group", "start (ms)", "stop (ms)", "throughput (Gb/s)", "normalized", "bytes delivered",
         "packets", "messages", "latency p50 (µs)", "latency p99 (µs)"), rows, what="flows", csv="flow_table.csv"))
    groups = s.get("groups") or {}
    if groups:
        rows = [(g, d.get("flows") if not isinstance(d.get("flows"), list) else len(d["flows"]),
                 d.get("throughput_gbps"), d.get("normalized"), d.get("jain"))
                for g, d in groups.items()]
        body.append("<h3>Groups</h3>" + html_table(("group", "flows", "throughput (Gb/s)", "normalized",
                                                    "Jain's index"), rows))
    levels = res.data.get("link_levels") or {}
    rows = [(lbl, levels.get(lbl, ""), None if not d.get("capacity") else d["capacity"] * 8e-9,
             d.get("bytes"), d.get("data_packets"), d.get("utilization"), d.get("data_utilization"))
            for lbl, d in (s.get("links") or {}).items()]
    rows.sort(key=lambda r: -(r[5] or 0.0))
    body.append("<h3>Links (busiest first)</h3>" + html_table(
        ("link", "level", "capacity (Gb/s)", "bytes", "data packets", "utilization", "data utilization"),
        rows, what="links", csv="link_table.csv"))
    fair = s.get("fairness") or {}
    rows = [("all flows", fair.get("jain"))] + [(g, j) for g, j in (fair.get("groups") or {}).items()]
    body.append("<h3>Fairness (Jain's index)</h3>" + html_table(("flows", "Jain's index"), rows))
    counters = s.get("counters") or {}
    if counters:
        rows = [(node, key, v) for node, d in sorted(counters.items()) for key, v in sorted(d.items())]
        body.append("<h3>Congestion-control counters</h3>" + html_table(("node", "counter", "value"), rows))
    ports = res.data.get("ports") or {}
    if ports:
        names = sorted({k for d in ports.values() for k, v in d.items() if v})
        rows = [(p, *[d.get(k, 0) for k in names]) for p, d in ports.items() if any(d.values())]
        body.append("<h3>Port counters at the end (IBA 16.1.3.5; nonzero columns)</h3>"
                    + html_table(("port", *names), rows, what="ports"))
    return section("Summary", "summary", "".join(body))

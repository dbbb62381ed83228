"""Every scenario key, described: its type, unit, default, range and one-line meaning
(issue 30 Deliver 3).  The validators (this package, :mod:`ibemu.validate` and each
scheme's schema) decide what is accepted; this table only describes it, and the scenario
reference of the documentation site is generated from it (docs/gen_ref.py).
tests/test_scenario_keyref.py fails when a key the validators accept is missing here, or
a key here is one they refuse.

A key's ``path`` is written as in an error message, with ``[]`` for any entry of an array
of tables and ``<...>`` for a key the user chooses (a port, a node, a link label).
:data:`KEYS` lists the sections of this module and of :mod:`.keyref_cc`, in the order
of the reference.
"""
from __future__ import annotations

from dataclasses import dataclass

from .keyref_cc import CC

__all__ = ["Key", "KEYS", "SECTIONS", "TEMPLATE_KEYS"]


@dataclass(frozen=True)
class Key:
    path: str           # e.g. "flow[].window", "switch[].port_buffers.<port>"
    type: str           # time, size, rate, integer, number, string, boolean, table, array ...
    unit: str           # of a number ("packets", "64-byte credits"); "" where the type carries it
    default: str        # "required", "-" (none: the feature is off), or the value
    range: str          # the values accepted ("" when the type says it all)
    meaning: str        # one line


K = Key
SCENARIO = [
    K("scenario", "table", "", "", "", "the run: name, emulated duration, seed"),
    K("scenario.name", "string", "", "the file's name", "printable, no '/', '..'", "the run's name"),
    K("scenario.duration", "time", "", "required", "> 0", "emulated time the run lasts"),
    K("scenario.seed", "integer", "", "1", "0 .. 2^63-1", "seed of every random choice: same seed, same run"),
    K("defaults", "table", "", "", "", "values every link, switch or HCA gets unless it sets its own"),
    K("defaults.link", "table", "", "", "", "link keys for every [[link]]"),
    K("defaults.switch", "table", "", "", "", "switch keys for every [[switch]]"),
    K("defaults.hca", "table", "", "", "", "HCA keys for every [[hca]]"),
]
LINK = [
    K("rate", "rate", "bytes/s", "4x_sdr (1 GB/s)", "> 0", "signalling rate of data (8b/10b removed)"),
    K("propagation", "time", "", "0ns", ">= 0", "propagation delay one way"),
    K("fc_period", "time", "", "262.144us", "> 0", "longest interval between flow-control packets (IBA 7.9.4)"),
    K("flow_control", "string", "", "wire", "wire, ideal", "whether flow-control packets take link time"),
]
SWITCH = [
    K("buffer", "size or 'N packets'", "", "4 packets", ">= one MTU", "input buffer per port and VL"),
    K("bypass_limit", "integer", "packets", "4", ">= 0", "times a head packet may be bypassed (seed 003 §3)"),
    K("forwarding_delay", "time", "", "40ns", ">= 0", "head-in to head-out delay of a packet"),
    K("mode", "string", "", "cut-through", "cut-through, store-and-forward", "forwarding mode"),
    K("crossbar_speedup", "number", "x link rate", "1 (none)", "1 .. 64",
      "a crossbar input reads its buffer this much faster than its link, feeding several outputs at once"),
    K("data_vls", "integer", "VLs", "1", "1, 2, 4, 8, 15", "data virtual lanes of each port"),
    K("sl2vl", "array or table", "", "SL mod data_vls", "16 VLs < data_vls", "SL-to-VL table, or one per port"),
    K("vlarb", "table", "", "every VL low, weight 255", "", "VL arbitration: high, low, limit_of_high_priority"),
    K("vlarb.high", "array or string", "64 bytes", "[]", "weights 0 .. 255", "high-priority [vl, weight] pairs"),
    K("vlarb.low", "array or string", "64 bytes", "every data VL, 255", "weights 0 .. 255",
      "low-priority [vl, weight] pairs"),
    K("vlarb.limit_of_high_priority", "integer", "4096 bytes", "255", "0 .. 255 (255: no limit)",
      "high-priority bytes sent before a low-priority packet may go"),
    K("enforce_pkeys", "boolean", "", "false", "", "the switch drops packets whose P_Key the port lacks"),
    K("pkeys", "array of integers", "", "[0xFFFF]", "0 .. 0xFFFF", "the port's P_Key table (IBA 10.9)"),
]
HCA = [
    K("mtu", "integer", "bytes", "2048", "256, 512, 1024, 2048, 4096", "largest payload of a packet"),
    K("buffer", "size", "", "4 max-size packets", ">= one MTU", "receive buffer per VL"),
    K("ack_every", "integer", "packets", "1", ">= 1", "one ACK per this many packets"),
    K("data_vls", "integer", "VLs", "1", "1, 2, 4, 8, 15", "data virtual lanes of the port"),
    K("vlarb", "table", "", "every VL low, weight 255", "", "VL arbitration of the HCA's port"),
    K("vlarb.high", "array or string", "64 bytes", "[]", "weights 0 .. 255", "high-priority [vl, weight] pairs"),
    K("vlarb.low", "array or string", "64 bytes", "every data VL, 255", "weights 0 .. 255",
      "low-priority [vl, weight] pairs"),
    K("vlarb.limit_of_high_priority", "integer", "4096 bytes", "255", "0 .. 255 (255: no limit)",
      "high-priority bytes sent before a low-priority packet may go"),
    K("ack_timeout", "time", "", "1.048576ms", "> 0", "RC local ACK timeout (IBA Timeout 8)"),
    K("retry_cnt", "integer", "retries", "7", "0 .. 7", "go-back-N retries without progress before QP error"),
    K("max_outstanding", "integer", "packets", "4096", ">= 1", "packets an RC requester keeps unacknowledged"),
    K("pkeys", "array of integers", "", "[0xFFFF]", "0 .. 0xFFFF", "the port's P_Key table (IBA 10.9)"),
]
NODES = [
    K("switch", "array of tables", "", "[]", "", "the switches"),
    K("switch[].name", "string", "", "required", "letters, digits, '_', '-', '.'", "the switch's name"),
    K("switch[].ports", "integer", "ports", "as many as links attach", "1 .. 254", "number of ports"),
    K("switch[].lft", "table", "", "the routing's", "", "linear forwarding table: DLID or HCA name -> port"),
    K("switch[].lft.<dlid or HCA>", "integer", "port", "", "a linked port", "output port for that destination"),
    K("switch[].adaptive", "boolean", "", "routing.adaptive", "", "adaptive routing in this switch (issue 31)"),
    K("switch[].adaptive_policy", "string", "", "routing.adaptive_policy", "credits, random, static",
      "how this switch picks a port of a group"),
    K("switch[].adaptive_groups", "table", "", "derived (minimal paths)", "",
      "adaptive routing groups: DLID or HCA name -> ports"),
    K("switch[].adaptive_groups.<dlid or HCA>", "array of integers", "ports", "", "linked ports",
      "the ports a packet to that destination may take"),
    K("switch[].port_buffers", "table", "", "{}", "", "input buffer of one port"),
    K("switch[].port_buffers.<port>", "size", "", "", ">= one MTU", "that port's input buffer per VL"),
    K("switch[].port_pkeys", "table", "", "{}", "", "P_Key table of one port"),
    K("switch[].port_pkeys.<port>", "array of integers", "", "", "0 .. 0xFFFF", "that port's P_Key table"),
    K("switch[].port_vlarb", "table", "", "{}", "", "VL arbitration table of one output port"),
    K("switch[].port_vlarb.<port>", "table", "", "", "as vlarb", "that port's VL arbitration table"),
    K("switch[].port_vlarb.<port>.high", "array or string", "64 bytes", "[]", "weights 0 .. 255", "as vlarb.high"),
    K("switch[].port_vlarb.<port>.low", "array or string", "64 bytes", "every data VL, 255", "weights 0 .. 255",
      "as vlarb.low"),
    K("switch[].port_vlarb.<port>.limit_of_high_priority", "integer", "4096 bytes", "255", "0 .. 255",
      "as vlarb.limit_of_high_priority"),
    K("switch[].guid", "integer or string", "", "0x0002c90000000001 + index", "64 bits", "node GUID"),
    K("switch[].desc", "string", "", "the name", "<= 64 bytes", "node description (ibnetdiscover)"),
    K("hca", "array of tables", "", "[]", "", "the HCAs (hosts)"),
    K("hca[].name", "string", "", "required", "letters, digits, '_', '-', '.'", "the HCA's name"),
    K("hca[].lid", "integer", "", "lowest free", "1 .. 0xBFFF, unique", "the port's base LID"),
    K("hca[].guid", "integer or string", "", "by index", "64 bits", "node GUID"),
    K("hca[].desc", "string", "", "the name", "<= 64 bytes", "node description (ibnetdiscover)"),
    K("link", "array of tables", "", "[]", "", "the links, each joining two ports"),
    K("link[].a", "string", "", "required", "node or node:port", "one end (the a->b direction starts here)"),
    K("link[].b", "string", "", "required", "node or node:port", "the other end"),
    K("link[].name", "string", "", "a->b", "", "label of the a->b direction (b->a: name.rev)"),
    K("link[].levels", "array of 2 strings", "", "-", "up<i>, down<i>", "fabric level of the two directions"),
]
FLOW = [
    K("name", "string", "", "flowN", "unique", "the flow's name in results"),
    K("src", "string", "", "required", "an HCA", "the sending HCA"),
    K("dst", "string", "", "required", "an HCA, not src", "the receiving HCA"),
    K("transport", "string", "", "rc", "rc, ud", "reliable connection or unreliable datagram"),
    K("op", "string", "", "send", "send, write, read (ud: send)", "the verb; read moves data dst -> src"),
    K("pattern", "string", "", "greedy", "greedy, messages, onoff, poisson", "when the flow has data to send"),
    K("message_size", "size or table", "", "2048", "1 byte .. 2GiB", "bytes per message, or a distribution"),
    K("message_size.dist", "string", "", "required", "exponential, uniform, choice", "distribution of sizes"),
    K("message_size.mean", "size", "", "required (exponential)", "", "mean size"),
    K("message_size.min", "size", "", "- (uniform: required)", "", "smallest size"),
    K("message_size.max", "size", "", "- (uniform: required)", "", "largest size"),
    K("message_size.values", "array of sizes", "", "required (choice)", "", "the sizes to choose from"),
    K("message_size.weights", "array of numbers", "", "equal", ">= 0", "their weights"),
    K("count", "integer", "messages", "required (messages)", ">= 1", "messages of a finite flow"),
    K("start", "time", "", "0", ">= 0", "when the flow starts"),
    K("stop", "time", "", "end of run", "> start", "when the flow stops"),
    K("window", "integer", "packets", "-", ">= 1 (rc only)", "packets in flight"),
    K("ipd", "integer", "", "-", "0 .. 255", "static inter-packet delay: rate = link rate / (ipd + 1)"),
    K("rate", "rate", "bytes/s", "-", "> 0", "static rate limit"),
    K("rate_fraction", "number", "", "-", "(0, 1]", "static rate limit as a fraction of the source link"),
    K("sl", "integer", "", "0", "0 .. 15", "service level"),
    K("mean_on", "time", "", "required (onoff)", "> 0", "mean of the exponential ON times"),
    K("mean_off", "time", "", "required (onoff)", "> 0", "mean of the exponential OFF times"),
    K("group", "string", "", "-", "", "label for aggregate series and plots"),
    K("pkey", "integer", "", "0xFFFF", "0 .. 0xFFFF", "the P_Key its packets carry"),
    K("mean_interarrival", "time", "", "required (poisson, or load)", "> 0", "mean time between messages"),
    K("load", "number", "", "required (poisson, or mean_interarrival)", "(0, 1]", "offered load of the source link"),
    K("path", "integer", "", "flow index mod 2^LMC", "0 .. 127, < 2^LMC", "LID offset of its QPs under LMC"),
]
OUTPUT = [
    K("output", "table", "", "", "", "what the run records"),
    K("output.bin", "time", "", "100us", "> 0", "time-series bin"),
    K("output.window", "time", "", "2ms", "> 0", "sliding window of the rate series"),
    K("output.plots", "boolean", "", "true", "", "draw the PNG plots"),
    K("output.plot_links", "array of strings", "", "all", "link labels", "links on links.png"),
    K("output.plot_groups", "array of strings", "", "all", "flow groups", "groups on throughput.png"),
    K("output.snaplen", "integer", "bytes", "whole frame", "1 .. 65535", "bytes of each frame a capture keeps"),
    K("routing", "table", "", "", "", "how the subnet manager fills the LFTs (OpenSM's engines)"),
    K("routing.engine", "string", "", "minhop", "minhop, updn, ftree, file", "the routing engine"),
    K("routing.lmc", "integer", "", "0", "0 .. 7", "LID mask control: 2^LMC LIDs per HCA port"),
    K("routing.roots", "array of strings", "", "found by the engine", "switch names", "root switches (updn, ftree)"),
    K("routing.lft_file", "string", "", "required (file)", "a path", "opensm-lfts.dump or ibroute dump to load"),
    K("routing.check_credit_loops", "boolean", "", "true", "", "refuse routes whose channel graph has a cycle"),
    K("routing.adaptive", "boolean", "", "false", "", "adaptive routing in every switch (docs/adaptive.md)"),
    K("routing.adaptive_policy", "string", "", "credits", "credits, random, static",
      "per packet: least loaded port, a random one (ns-3 ECMP), or the LFT's"),
    K("routing.reorder_window", "integer", "packets", "64 with adaptive routing, else 0", "0 .. 4194304",
      "RC responders keep packets this far ahead of the expected PSN (0: in order only)"),
    K("routing.arn", "boolean", "", "false", "needs routing.adaptive",
      "adaptive routing notifications: congestion one hop on (docs/adaptive.md)"),
    K("routing.arn_threshold", "integer", "MTUs", "1", "1 .. 65536",
      "notify upstream for a packet queued behind this many full packets' bytes"),
    K("routing.arn_hold", "time", "", "10us", "> 0", "a notified port is avoided for the DLID this long"),
]
FAULT = [
    K("loss", "number", "", "0", "0 .. 1", "probability a frame is lost"),
    K("duplicate", "number", "", "0", "0 .. 1", "probability a frame arrives twice"),
    K("reorder", "number", "", "0", "0 .. 1", "probability a frame is held back"),
    K("reorder_depth", "integer", "frame times", "3", "1 .. 1024", "how far a held-back frame falls behind"),
    K("corrupt", "number", "", "0", "0 .. 1", "probability a frame has one bit flipped"),
    K("down", "array of [start, end]", "", "[]", "times", "intervals the link is down (both directions)"),
]
TRAFFIC_OWN = [
    K("traffic", "array of tables", "", "[]", "", "many flows made by a pattern (docs: traffic)"),
    K("traffic[].pattern", "string", "", "required", "uniform, permutation, shift, bit_reversal, "
      "bit_complement, all_to_all, hotspot, incast", "the pattern"),
    K("traffic[].hosts", "array or string", "", "every HCA", "HCA names", "the hosts taking part"),
    K("traffic[].exclude", "array of strings", "", "[]", "HCA names", "hosts left out"),
    K("traffic[].group", "string", "", "the pattern", "", "group of the flows made"),
    K("traffic[].seed", "integer", "", "scenario.seed", "0 .. 2^63-1", "seed of the pattern's draws"),
    K("traffic[].max_flows", "integer", "flows", "65536", ">= 1", "guard on the number of flows made"),
    K("traffic[].flows_per_host", "integer", "flows", "1", ">= 1", "destinations per host (uniform)"),
    K("traffic[].k", "integer", "", "required (shift)", "", "the shift: host i sends to i + k"),
    K("traffic[].destination", "string or integer", "", "the first host", "a host or an index", "the hot spot"),
    K("traffic[].fraction", "number", "", "1", "(0, 1]", "fraction of the hosts sending to the hot spot"),
    K("traffic[].senders", "integer", "hosts", "all", ">= 1", "number of hosts sending to the hot spot"),
    K("traffic[].background", "string or table", "", "-", "a pair pattern", "traffic among the other hosts"),
    K("traffic[].background.pattern", "string", "", "required", "a pair pattern", "the background's pattern"),
    K("traffic[].background.group", "string", "", "background", "", "group of the background's flows"),
    K("traffic[].background.flows_per_host", "integer", "flows", "1", ">= 1", "as traffic[].flows_per_host"),
    K("traffic[].background.k", "integer", "", "required (shift)", "", "as traffic[].k"),
    K("traffic[].arrival", "string", "", "greedy", "as flow pattern", "each flow's pattern (flow[].pattern)"),
    K("traffic[].background.arrival", "string", "", "greedy", "as flow pattern", "each flow's pattern"),
]


JOBS = [
    K("job", "array of tables", "", "[]", "", "closed-loop jobs: ranks on hosts running collective operations"),
    K("job[].name", "string", "", "job<i>", "", "the job's name (its flows' group)"),
    K("job[].hosts", "array or table", "", "required", "HCA names, {first}, {range}, {every}, {random}",
      "the ranks' hosts: rank i on the i-th"),
    K("job[].hosts.first", "integer", "hosts", "required", ">= 1", "the first N HCAs"),
    K("job[].hosts.range", "array", "", "required", "[start, stop(, step)] HCA positions", "HCAs as Python's range"),
    K("job[].hosts.every", "integer", "", "required", ">= 1", "every k-th HCA"),
    K("job[].hosts.offset", "integer", "", "0", ">= 0", "the first HCA index of every"),
    K("job[].hosts.count", "integer", "hosts", "all", ">= 1", "how many HCAs every takes"),
    K("job[].hosts.random", "integer", "hosts", "required", ">= 1", "N HCAs drawn at random"),
    K("job[].hosts.seed", "integer", "", "scenario.seed", "0 .. 2^63-1", "seed of the random draw"),
    K("job[].op", "string", "", "send", "send, write", "the RC operation of the job's messages"),
    K("job[].sl", "integer", "", "0", "0 .. 15", "service level of the job's messages"),
    K("job[].start", "time", "", "0ns", ">= 0", "when the ranks start"),
    K("job[].shared", "boolean", "", "false", "", "may share hosts with other jobs (each job concerned says so)"),
    K("job[].max_messages", "integer", "messages", "10000000", ">= 1", "guard on the messages the job sends"),
    K("job[].ops", "array of tables", "", "required (or trace)", "", "the operations the ranks run, in order"),
    K("job[].ops[].type", "string", "", "required", "allreduce, allgather, reduce_scatter, alltoall, broadcast, "
      "barrier, halo, p2p", "the operation"),
    K("job[].ops[].algorithm", "string", "", "ring", "ring, recursive_doubling (allreduce)", "the algorithm"),
    K("job[].ops[].size", "size", "bytes", "required (barrier: 1 B)", ">= 1 B", "the operation's message size"),
    K("job[].ops[].iterations", "integer", "", "1", ">= 1", "times the operation repeats"),
    K("job[].ops[].compute", "time", "", "0ns", ">= 0", "compute time before each iteration but the first"),
    K("job[].ops[].root", "integer", "rank", "0", "a rank", "the broadcast's root"),
    K("job[].ops[].dims", "integer", "", "2", "2, 3", "the halo's dimensions"),
    K("job[].ops[].grid", "array of integers", "ranks", "balanced", "product = ranks", "the halo's grid"),
    K("job[].ops[].messages", "array", "", "required (p2p)", "[src, dst] or [src, dst, size]",
      "the p2p messages between ranks"),
    K("job[].trace", "string", "", "-", "an OTF2 anchor file (ibemu[traces])",
      "an MPI trace the ranks replay instead of ops, relative to the scenario"),
    K("job[].compute_scale", "number", "", "1", "0 .. 1e6", "times the trace's compute time between MPI calls"),
    K("job[].algorithm", "table", "", "", "", "the algorithm of the trace's collectives, per kind"),
    K("job[].algorithm.allreduce", "string", "", "ring", "ring, recursive_doubling", "MPI_Allreduce's algorithm"),
    K("job[].algorithm.allgather", "string", "", "ring", "ring", "MPI_Allgather(v)'s algorithm"),
    K("job[].algorithm.reduce_scatter", "string", "", "ring", "ring", "MPI_Reduce_scatter(_block)'s algorithm"),
    K("job[].algorithm.alltoall", "string", "", "pairwise", "pairwise", "MPI_Alltoall(v)'s algorithm"),
    K("job[].algorithm.broadcast", "string", "", "binomial", "binomial", "MPI_Bcast's algorithm"),
    K("job[].algorithm.barrier", "string", "", "dissemination", "dissemination", "MPI_Barrier's algorithm"),
]


def _under(prefix: str, keys: list[Key]) -> list[Key]:
    return [Key(prefix + "." + k.path, k.type, k.unit, k.default, k.range, k.meaning) for k in keys]


_TRAFFIC_FLOW = [k for k in FLOW if k.path.split(".")[0] not in ("name", "src", "dst", "pattern", "group")]
FLOWS = [K("flow", "array of tables", "", "[]", "", "the flows, each between two HCAs"), *_under("flow[]", FLOW)]
TRAFFIC = TRAFFIC_OWN + _under("traffic[]", _TRAFFIC_FLOW) + _under("traffic[].background", _TRAFFIC_FLOW)
FAULTS = [
    K("faults", "table", "", "", "", "link faults for every directed link"), *_under("faults", FAULT),
    K("faults.link", "table", "", "{}", "", "faults of one link, over the [faults] keys"),
    K("faults.link.<label>", "table", "", "", "a direction's label or a link's name", "that link's faults"),
    *_under("faults.link.<label>", FAULT),
]
TEMPLATE_COMMON = [
    K("lmc", "integer", "", "0", "0 .. 7", "LMC: hosts' LIDs are spaced 2^lmc (writes routing.lmc)"),
    K("rates", "rate or array", "", "defaults.link.rate", "one, or one per level", "link rate per level"),
    K("propagations", "time or array", "", "0ns", "one, or one per level", "propagation per level"),
]
TEMPLATE_KEYS = {
    "santos_fig1": [
        K("L", "integer", "flows", "5", ">= 0", "local sources on switch B"),
        K("R", "integer", "flows", "1", ">= 0", "remote sources on switch A"),
        K("buffer_packets", "integer", "packets", "4", ">= 1", "switch input buffers (defaults.switch.buffer)"),
        K("window", "integer", "packets", "-", ">= 1", "every flow's window"),
        K("rate_fraction", "number or table", "", "-", "(0, 1]", "static rate, or per group or flow"),
        K("duration", "time", "", "100ms", "> 0", "the run's duration (scenario.duration)"),
        K("victim", "boolean", "", "true", "", "add the victim flow AV -> BV"),
        K("victim_start", "time", "", "40ms", "", "when the victim starts"),
        K("victim_stop", "time", "", "60ms", "", "when the victim stops"),
        K("spacing", "time", "", "100us", ">= 0", "between flow starts, locals first"),
        K("link_rate", "rate", "", "4x_sdr", "", "every link's rate (defaults.link.rate)"),
        K("pattern", "string", "", "greedy", "greedy, onoff", "the local and remote flows' pattern"),
        K("mean_on", "time", "", "required (onoff)", "> 0", "mean ON time"),
        K("mean_off", "time", "", "required (onoff)", "> 0", "mean OFF time"),
        K("flow_control", "string", "", "ideal", "ideal, wire", "defaults.link.flow_control"),
    ],
    "xgft": [
        K("h", "integer", "levels", "len(m)", "1 .. 16", "switch levels"),
        K("m", "array of integers", "", "required", ">= 1 each", "children per switch, per level"),
        K("w", "array of integers", "", "required", ">= 1 each, w1 = 1", "parents per node, per level"),
        *TEMPLATE_COMMON,
    ],
    "kary_ntree": [
        K("k", "integer", "", "required", ">= 2", "half the switch radix"),
        K("n", "integer", "levels", "required", "1 .. 16", "switch levels"),
        *TEMPLATE_COMMON,
    ],
    "fat_tree2": [
        K("radix", "integer", "ports", "required", ">= 4", "switch radix"),
        K("leaves", "integer", "switches", "radix", "1 .. radix", "leaf switches"),
        *TEMPLATE_COMMON,
    ],
    "leaf_spine": [
        K("leaves", "integer", "switches", "required", ">= 1", "leaf switches"),
        K("hosts_per_leaf", "integer", "hosts", "required", ">= 1", "hosts on each leaf"),
        K("spines", "integer", "switches", "required", ">= 1", "spine switches"),
        K("uplinks", "integer", "links", "spines", ">= 1", "uplinks per leaf (or oversubscription)"),
        K("oversubscription", "number", "", "-", "> 0", "hosts_per_leaf / uplinks (or uplinks)"),
        *TEMPLATE_COMMON,
    ],
}
TEMPLATE = [K("template", "table", "", "-", "", "expand a named topology (name and its parameters)"),
            K("template.name", "string", "", "required", ", ".join(TEMPLATE_KEYS), "the template")]
for _name, _keys in TEMPLATE_KEYS.items():
    TEMPLATE += _under("template(%s)" % _name, _keys)


def _sections() -> list[tuple[str, list[Key]]]:
    return [
        ("Run", SCENARIO), ("Links", _under("defaults.link", LINK)),
        ("Switches", _under("defaults.switch", SWITCH)), ("HCAs", _under("defaults.hca", HCA)),
        ("Nodes and links", NODES + _under("switch[]", SWITCH) + _under("hca[]", HCA) + _under("link[]", LINK)),
        ("Flows", FLOWS), ("Traffic patterns", TRAFFIC), ("Jobs", JOBS), ("Output and routing", OUTPUT),
        ("Faults", FAULTS), ("Congestion control", [Key(*row) for row in CC]), ("Templates", TEMPLATE),
    ]


SECTIONS: list[tuple[str, list[Key]]] = _sections()
KEYS: list[Key] = [k for _, keys in SECTIONS for k in keys]

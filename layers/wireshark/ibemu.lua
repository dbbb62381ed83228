-- ibemu.lua -- Wireshark / tshark plugin for the frames ibemu puts on the wire.
--
-- Load it with   tshark -X lua_script:layers/wireshark/ibemu.lua -r capture.pcap
-- (from a source checkout; installed, it is ibemu/layers/wireshark/ibemu.lua inside the
-- package, whose path `ibemu sample` prints),
-- or copy it to the personal plugin folder (Help > About > Folders) and restart.
-- Checked with Wireshark/tshark 4.0 (Lua 5.2).
--
-- What it adds to stock Wireshark:
--
--  * "ibemu" -- the 16-byte UDP shim of ibemu/wire/shim.py (version 2):
--        magic 'iB' (2) | version 2 (1) | flags (1) | seq (4) | time_ps (8)   big-endian
--        flags = kind (bits 0-1) | depth << 2 (bits 2-7)
--    recognised heuristically on any UDP port (and selectable with Decode As on
--    udp.port).  kind 0: the rest is an InfiniBand packet from the LRH on, handed to
--    the built-in "infiniband" dissector; kind 1: a link flow-control packet; kind 2: a
--    synchronisation message of the exact wall clock (no frame, no sequence number:
--    phase u8 | step u8 | 6 zero bytes | round u64 | a u64 | b u64 | c u64, 40 bytes,
--    ibemu/runtime/syncproto.py), shown as ibemu.sync.* and never handed to the
--    InfiniBand dissector.  ibemu.time_ps is the emulated time (picoseconds) at which
--    the frame's first bit left the sender, ibemu.depth the depth of its arrival event
--    among the events of that instant.  Version 1 (time in ns, no depth) is not read.
--    The emulation's datagrams end with a 16-byte MAC tag (keyed BLAKE2b over shim and
--    frame, issue 14): bytes past the frame's own length (a link packet's 6, an IB
--    packet's PktLen words plus the VCRC) are shown as "ibemu.tag", not given to the
--    frame's dissector.
--    If another dissector already claims the ports used (e.g. 19999, 20000), run with
--    -o udp.try_heuristic_first:TRUE or use Decode As.
--
--  * "ibemu_link" -- InfiniBand link flow-control packets (IBA 7.9.4; ibemu/wire/linkpkt.py):
--        Op(4) FCTBS(12) | VL(4) FCCL(12) | LPCRC(16, least significant byte first)
--    registered for ERF record type 25, replacing tshark 4.0's built-in
--    "infiniband_link", which reports every such packet as malformed.
--
--  * ibemu.fecn / ibemu.becn -- the BTH's FECN and BECN bits as filterable fields
--    (stock Wireshark shows that byte only as "Reserved").  They are added, in a small
--    "ibemu" subtree, to every InfiniBand packet of an ERF capture (record type 21, by
--    a wrapper around the built-in dissector) and of a UDP capture (kind 0).
--    Example: tshark -X lua_script:ibemu.lua -r capture.pcap -Y "ibemu.becn == 1"
--
-- ICRC and VCRC are sent least significant byte first (ibemu/wire/crc.py); the
-- built-in dissector reads them most significant first, so it shows them byte-swapped.
-- The LPCRC below is read least significant byte first and checked.

local SHIM_LEN = 16
local SHIM_VERSION = 2
local KIND_PACKET, KIND_LINK, KIND_SYNC = 0, 1, 2
local SYNC_LEN = 40
local LINK_LEN = 6
local TAG_LEN = 16
local LRH_LEN, GRH_LEN, BTH_LEN = 8, 40, 12
local LNH_IBA_LOCAL, LNH_IBA_GLOBAL = 2, 3

local ib_dissector = Dissector.get("infiniband")

---------------------------------------------------------------------------------------
-- Protocol "ibemu": the UDP shim, plus the FECN/BECN fields of IB packets

local p_ibemu = Proto("ibemu", "ibemu UDP shim")

local kind_names = { [KIND_PACKET] = "InfiniBand packet", [KIND_LINK] = "link packet",
                     [KIND_SYNC] = "sync message (exact clock)" }
local phase_names = { [1] = "A (frames sent)", [2] = "B (promise)" }

local f_magic   = ProtoField.string("ibemu.magic", "Magic")
local f_version = ProtoField.uint8("ibemu.version", "Version", base.DEC)
local f_tag = ProtoField.bytes("ibemu.tag", "MAC tag (BLAKE2b-128)")
local f_flags   = ProtoField.uint8("ibemu.flags", "Flags", base.HEX)
local f_kind    = ProtoField.uint8("ibemu.kind", "Kind", base.DEC, kind_names, 0x03)
local f_depth   = ProtoField.uint8("ibemu.depth", "Depth (among the instant's events)", base.DEC, nil, 0xFC)
local f_seq     = ProtoField.uint32("ibemu.seq", "Sequence number", base.DEC)
local f_time    = ProtoField.uint64("ibemu.time_ps", "Emulated send time (ps)", base.DEC)
local f_sync_phase = ProtoField.uint8("ibemu.sync.phase", "Phase", base.DEC, phase_names)
local f_sync_step  = ProtoField.uint8("ibemu.sync.step", "Step", base.DEC)
local f_sync_round = ProtoField.uint64("ibemu.sync.round", "Round", base.DEC)
local f_sync_a  = ProtoField.uint64("ibemu.sync.a", "a (A: frames sent; B: key time, ps)", base.DEC)
local f_sync_b  = ProtoField.uint64("ibemu.sync.b", "b (B: key seq)", base.DEC)
local f_sync_c  = ProtoField.uint64("ibemu.sync.c", "c (B: idle bits)", base.HEX)
local f_cn      = ProtoField.uint8("ibemu.cn", "BTH FECN/BECN byte", base.HEX)
local f_fecn    = ProtoField.uint8("ibemu.fecn", "FECN", base.DEC, nil, 0x80,
                                   "Forward Explicit Congestion Notification (BTH)")
local f_becn    = ProtoField.uint8("ibemu.becn", "BECN", base.DEC, nil, 0x40,
                                   "Backward Explicit Congestion Notification (BTH)")

local f_stored  = ProtoField.uint32("ibemu.stored", "Bytes stored (snap length)", base.DEC)
local f_linklabel = ProtoField.string("ibemu.link", "Directed link")

p_ibemu.fields = { f_magic, f_version, f_flags, f_kind, f_depth, f_seq, f_time, f_cn, f_fecn, f_becn,
                   f_tag, f_stored, f_linklabel, f_sync_phase, f_sync_step, f_sync_round,
                   f_sync_a, f_sync_b, f_sync_c }

local e_bad_sync = ProtoExpert.new("ibemu.sync.bad", "Sync message not 40 bytes",
                                   expert.group.MALFORMED, expert.severity.ERROR)
p_ibemu.experts = { e_bad_sync }

-- The links of a live capture: the run's address map (parts/addresses.toml of the run
-- folder, or the file of `ibemu node --make-map`) names, per sending port, its UDP port
-- and directed link:   "A:1" = "127.0.0.1:18600"   # link A->L1
-- Give its path with  -o ibemu.address_map:PATH  (or Edit > Preferences > Protocols > ibemu).
p_ibemu.prefs.address_map = Pref.string("Address map", "",
    "the run's address map (RUN/parts/addresses.toml): the shim's link labels from the UDP source port")
local link_of_port = nil
local link_map_path = nil

local function link_labels()
    local path = p_ibemu.prefs.address_map
    if path == link_map_path then return link_of_port end
    link_map_path, link_of_port = path, {}
    if path == nil or path == "" then return link_of_port end
    local f = io.open(path, "r")
    if f == nil then return link_of_port end
    for line in f:lines() do
        local udp, label = line:match('^%s*"[^"]*"%s*=%s*"[^"]*:(%d+)"%s*#%s*link%s+(.-)%s*$')
        if udp then link_of_port[tonumber(udp)] = label end
    end
    f:close()
    return link_of_port
end

---------------------------------------------------------------------------------------
-- Protocol "ibemu_link": link flow-control packets

local p_link = Proto("ibemu_link", "InfiniBand Link Flow Control (ibemu)")

local op_names = { [0] = "Normal Flow Control", [1] = "Flow Control Init",
                   [2] = "Adaptive Routing Notification (ibemu; VL 15, DLID in the credit fields)" }

local f_op     = ProtoField.uint16("ibemu_link.op", "Op", base.DEC, op_names, 0xF000)
local f_fctbs  = ProtoField.uint16("ibemu_link.fctbs", "FCTBS (blocks sent)", base.DEC, nil, 0x0FFF)
local f_vl     = ProtoField.uint16("ibemu_link.vl", "Virtual Lane", base.DEC, nil, 0xF000)
local f_fccl   = ProtoField.uint16("ibemu_link.fccl", "FCCL (credit limit)", base.DEC, nil, 0x0FFF)
local f_lpcrc  = ProtoField.uint16("ibemu_link.lpcrc", "LPCRC", base.HEX)
local f_lpcrc_ok = ProtoField.bool("ibemu_link.lpcrc_ok", "LPCRC correct")

p_link.fields = { f_op, f_fctbs, f_vl, f_fccl, f_lpcrc, f_lpcrc_ok }

local e_bad_lpcrc = ProtoExpert.new("ibemu_link.lpcrc.bad", "Bad LPCRC",
                                    expert.group.CHECKSUM, expert.severity.WARN)
local e_long = ProtoExpert.new("ibemu_link.long", "Link packet longer than 6 bytes",
                               expert.group.MALFORMED, expert.severity.WARN)
local e_short = ProtoExpert.new("ibemu_link.short", "Link packet shorter than 6 bytes",
                                expert.group.MALFORMED, expert.severity.ERROR)
p_link.experts = { e_bad_lpcrc, e_long, e_short }

-- The LPCRC: CRC-16, polynomial 0x100B (reflected 0xD008), initial 0xFFFF, final
-- xor 0xFFFF, over the first 4 bytes (the VCRC's CRC; ibemu/wire/crc.py).
local function lpcrc(tvb)
    local crc = 0xFFFF
    for i = 0, 3 do
        crc = bit32.bxor(crc, tvb(i, 1):uint())
        for _ = 1, 8 do
            if bit32.band(crc, 1) == 1 then
                crc = bit32.bxor(bit32.rshift(crc, 1), 0xD008)
            else
                crc = bit32.rshift(crc, 1)
            end
        end
    end
    return bit32.bxor(crc, 0xFFFF)
end

-- Decode a link packet at the start of tvb; returns the number of bytes used.
local function dissect_link(tvb, pinfo, tree)
    pinfo.cols.protocol = "IB Link"
    local item = tree:add(p_link, tvb(0, math.min(tvb:len(), LINK_LEN)))
    if tvb:len() < LINK_LEN then
        item:add_proto_expert_info(e_short, string.format(
            "Link packet truncated: %d of %d bytes", tvb:len(), LINK_LEN))
        pinfo.cols.info = "Truncated link packet"
        return tvb:len()
    elseif tvb:len() > LINK_LEN then
        item:add_proto_expert_info(e_long)
    end
    local w0, w1 = tvb(0, 2):uint(), tvb(2, 2):uint()
    local op, fctbs = bit32.rshift(w0, 12), bit32.band(w0, 0x0FFF)
    local vl, fccl = bit32.rshift(w1, 12), bit32.band(w1, 0x0FFF)
    item:add(f_op, tvb(0, 2))
    item:add(f_fctbs, tvb(0, 2))
    item:add(f_vl, tvb(2, 2))
    item:add(f_fccl, tvb(2, 2))
    local sent = tvb(4, 2):le_uint()
    local crc_item = item:add_le(f_lpcrc, tvb(4, 2))
    local good = (sent == lpcrc(tvb))
    item:add(f_lpcrc_ok, tvb(4, 2), good):set_generated()
    if not good then
        crc_item:add_proto_expert_info(e_bad_lpcrc,
            string.format("Bad LPCRC: 0x%04x, expected 0x%04x", sent, lpcrc(tvb)))
    end
    local summary = string.format("%s VL%d FCTBS=%d FCCL=%d",
                                  op_names[op] or ("Op " .. op), vl, fctbs, fccl)
    if op == 2 then     -- ibemu's ARN: the DLID in FCTBS and the top four FCCL bits
        summary = string.format("Adaptive Routing Notification, DLID %d",
                                bit32.bor(bit32.lshift(fctbs, 4), bit32.rshift(fccl, 8)))
    end
    item:append_text(", " .. summary)
    pinfo.cols.info = summary
    return LINK_LEN
end

function p_link.dissector(tvb, pinfo, tree)
    return dissect_link(tvb, pinfo, tree)
end

local link_dissector = Dissector.get("ibemu_link")

---------------------------------------------------------------------------------------
-- FECN / BECN of an InfiniBand packet (tvb starts at the LRH)

-- Offset of the BTH, or nil when the packet has none (LNH 0 raw, 1 IPv6) or is short.
local function bth_offset(tvb)
    if tvb:len() < 2 then return nil end
    local lnh = bit32.band(tvb(1, 1):uint(), 3)
    local off
    if lnh == LNH_IBA_LOCAL then
        off = LRH_LEN
    elseif lnh == LNH_IBA_GLOBAL then
        off = LRH_LEN + GRH_LEN
    else
        return nil
    end
    if tvb:len() < off + BTH_LEN then return nil end
    return off
end

-- Add ibemu.fecn / ibemu.becn under *tree*; appends FECN/BECN to the Info column.
local function add_cn(tvb, pinfo, tree)
    local off = bth_offset(tvb)
    if off == nil then return end
    local r = tvb(off + 4, 1)
    local byte = r:uint()
    local fecn, becn = bit32.rshift(byte, 7), bit32.band(bit32.rshift(byte, 6), 1)
    local item = tree:add(p_ibemu, r, string.format(
        "ibemu Congestion Notification: FECN=%d BECN=%d", fecn, becn))
    item:add(f_fecn, r)
    item:add(f_becn, r)
    local marks = (fecn == 1 and "[FECN]" or "") .. (becn == 1 and "[BECN]" or "")
    if marks ~= "" then
        local info = tostring(pinfo.cols.info)
        pinfo.cols.info:append((info == "" or info:sub(-1) == " ") and marks or (" " .. marks))
    end
end

-- A frame stored with a snap length (ibemu run --snaplen N): the built-in dissector
-- decodes its headers, then finds the payload short and sets the Info column to
-- "Invalid Packet Length from LRH! [Malformed Packet]".  Put the opcode and QP back and
-- say how much of the frame is stored (no expert error: nothing is malformed).
local fe_opcode = Field.new("infiniband.bth.opcode")
local fe_destqp = Field.new("infiniband.bth.destqp")

function snapped_info(tvb, pinfo, tree)
    local op, qp = fe_opcode(), fe_destqp()
    if op == nil then return end
    local name = op.display:gsub("^.-: ", "")
    pinfo.cols.info:clear_fence()
    pinfo.cols.info:set(string.format("%s QP=0x%06x [snapped: %d of %d bytes] ", name,
                                      qp and qp.value or 0, tvb:len(), tvb:reported_len()))
    tree:add(f_stored, tvb:len()):set_generated()
end

-- Hand an InfiniBand packet to the built-in dissector, then add FECN/BECN.  A
-- malformed packet is reported by the built-in dissector (Dissector:call raises a Lua
-- error after marking it); the pcall keeps that from hiding the FECN/BECN subtree.
local function dissect_ib(tvb, pinfo, tree, cn_tree)
    pcall(function() ib_dissector:call(tvb, pinfo, tree) end)
    if tvb:len() < tvb:reported_len() then snapped_info(tvb, pinfo, tree) end
    add_cn(tvb, pinfo, cn_tree or tree)
    return tvb:len()
end

---------------------------------------------------------------------------------------
-- The UDP shim

local function is_shim(tvb)
    return tvb:len() >= SHIM_LEN
        and tvb(0, 2):string() == "iB"
        and tvb(2, 1):uint() == SHIM_VERSION
        and bit32.band(tvb(3, 1):uint(), 3) <= KIND_SYNC
end

-- A synchronisation message of the exact clock (kind 2): *len* bytes of tvb from *o*,
-- the bytes after the shim (the MAC tag excluded).
local function dissect_sync(tvb, o, len, pinfo, item)
    pinfo.cols.protocol = "ibemu sync"
    if len ~= SYNC_LEN then
        item:add_proto_expert_info(e_bad_sync, string.format(
            "Sync message of %d bytes, expected %d", len, SYNC_LEN))
        pinfo.cols.info = "Malformed sync message"
        return
    end
    local phase, step = tvb(o, 1):uint(), tvb(o + 1, 1):uint()
    local sub = item:add(p_ibemu, tvb(o, SYNC_LEN), "Sync message (exact clock)")
    sub:add(f_sync_phase, tvb(o, 1))
    sub:add(f_sync_step, tvb(o + 1, 1))
    sub:add(f_sync_round, tvb(o + 8, 8))
    sub:add(f_sync_a, tvb(o + 16, 8))
    sub:add(f_sync_b, tvb(o + 24, 8))
    sub:add(f_sync_c, tvb(o + 32, 8))
    local rnd = tostring(tvb(o + 8, 8):uint64())
    local summary
    if phase == 1 then
        summary = string.format("Sync A round %s: %s frames sent", rnd, tostring(tvb(o + 16, 8):uint64()))
    elseif phase == 2 then
        summary = string.format("Sync B round %s step %d: key (%s ps, %s)", rnd, step,
                                tostring(tvb(o + 16, 8):uint64()), tostring(tvb(o + 24, 8):uint64()))
    else
        summary = string.format("Sync phase %d round %s", phase, rnd)
    end
    sub:append_text(", " .. summary)
    pinfo.cols.info = summary
end

local function dissect_shim(tvb, pinfo, tree)
    if not is_shim(tvb) then return 0 end
    local flags = tvb(3, 1):uint()
    local kind, depth = bit32.band(flags, 3), bit32.rshift(flags, 2)
    local seq = tvb(4, 4):uint()
    local item = tree:add(p_ibemu, tvb(0, SHIM_LEN))
    item:add(f_magic, tvb(0, 2))
    item:add(f_version, tvb(2, 1))
    local fl = item:add(f_flags, tvb(3, 1))
    fl:add(f_kind, tvb(3, 1))
    fl:add(f_depth, tvb(3, 1))
    item:add(f_seq, tvb(4, 4))
    item:add(f_time, tvb(8, 8))
    if kind == KIND_SYNC then
        item:append_text(", " .. kind_names[kind])
    else
        item:append_text(string.format(", %s, seq %d, t=%s ps, depth %d",
                                       kind_names[kind], seq, tostring(tvb(8, 8):uint64()), depth))
    end
    pinfo.cols.protocol = "ibemu"
    local label = link_labels()[pinfo.src_port]
    if label then
        item:add(f_linklabel, label):set_generated()
        item:append_text(", link " .. label)
    end
    -- the frame's own length; what follows it is the MAC tag
    local len = tvb:len() - SHIM_LEN
    local flen = len
    if kind == KIND_SYNC then
        flen = SYNC_LEN
    elseif kind == KIND_LINK then
        flen = LINK_LEN
    elseif len >= 6 then
        flen = bit32.band(tvb(SHIM_LEN + 4, 2):uint(), 0x7FF) * 4 + 2
    end
    if len == flen + TAG_LEN then
        item:add(f_tag, tvb(SHIM_LEN + flen, TAG_LEN))
        len = flen
    end
    if kind == KIND_SYNC then
        -- no frame: never handed to the InfiniBand dissector
        dissect_sync(tvb, SHIM_LEN, len, pinfo, item)
        return tvb:len()
    end
    local rest = tvb(SHIM_LEN, len):tvb()
    if kind == KIND_LINK then
        -- through the protocol's handle, so "ibemu_link" is a layer of the frame
        link_dissector:call(rest, pinfo, tree)
    else
        dissect_ib(rest, pinfo, tree, item)
    end
    return tvb:len()
end

-- Decode As (udp.port) and direct calls
function p_ibemu.dissector(tvb, pinfo, tree)
    return dissect_shim(tvb, pinfo, tree)
end

-- Heuristic on UDP: magic 'iB', version 2, kind 0, 1 or 2, at least 16 bytes
local function heur_shim(tvb, pinfo, tree)
    if not is_shim(tvb) then return false end
    dissect_shim(tvb, pinfo, tree)
    return true
end

p_ibemu:register_heuristic("udp", heur_shim)
DissectorTable.get("udp.port"):add_for_decode_as(p_ibemu)

---------------------------------------------------------------------------------------
-- ERF records: type 21 (InfiniBand, wrapped to add FECN/BECN), type 25 (link packets)

local p_erf_ib = Proto("ibemu_ib", "InfiniBand (ibemu FECN/BECN wrapper)")

function p_erf_ib.dissector(tvb, pinfo, tree)
    return dissect_ib(tvb, pinfo, tree)
end

local erf_types = DissectorTable.get("erf.types.type")
erf_types:add(21, p_erf_ib)
erf_types:add(25, p_link)

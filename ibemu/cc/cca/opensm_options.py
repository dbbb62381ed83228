"""Every option of OpenSM 3.3's opensm.conf, with OpenSM 3.3.23's defaults (issue 18 item 9).

The list is what ``opensm -c FILE`` (OpenSM 3.3.23, as Debian 12 ships it) writes: one
``name value`` line per option, in its order, the per-SL CA congestion entries once
(SL 0), ``(null)`` for an unset string.  ibemu keeps it so that a complete opensm.conf
is accepted (:func:`ibemu.cc.cca.opensm.parse_opensm`: congestion control applied,
routing options read for the subnet manager, every other option listed once as not modelled, a misspelt
name an error naming the closest valid one) and so that tests can write a complete file
in OpenSM's format (:func:`default_conf`) without OpenSM installed.
"""
from __future__ import annotations

OPENSM_VERSION = "3.3.23"

DEFAULTS: tuple[tuple[str, str], ...] = (
    ('guid', '0x0000000000000000'),
    ('m_key', '0x0000000000000000'),
    ('m_key_lease_period', '0'),
    ('m_key_protection_level', '0'),
    ('m_key_lookup', 'TRUE'),
    ('sm_key', '0x0000000000000001'),
    ('sa_key', '0x0000000000000001'),
    ('subnet_prefix', '0xfe80000000000000'),
    ('lmc', '0'),
    ('lmc_esp0', 'FALSE'),
    ('sm_sl', '0'),
    ('packet_life_time', '0x12'),
    ('vl_stall_count', '0x07'),
    ('leaf_vl_stall_count', '0x07'),
    ('head_of_queue_lifetime', '0x12'),
    ('leaf_head_of_queue_lifetime', '0x10'),
    ('max_op_vls', '5'),
    ('force_link_speed', '15'),
    ('force_link_speed_ext', '31'),
    ('force_link_width', '255'),
    ('fdr10', '1'),
    ('subnet_timeout', '18'),
    ('local_phy_errors_threshold', '0x08'),
    ('overrun_errors_threshold', '0x08'),
    ('use_mfttop', 'TRUE'),
    ('partition_config_file', '/etc/opensm/partitions.conf'),
    ('no_partition_enforcement', 'FALSE'),
    ('part_enforce', 'both'),
    ('allow_both_pkeys', 'FALSE'),
    ('keep_pkey_indexes', 'TRUE'),
    ('sm_assigned_guid', '0x00'),
    ('sweep_interval', '10'),
    ('reassign_lids', 'FALSE'),
    ('force_heavy_sweep', 'FALSE'),
    ('sweep_on_trap', 'TRUE'),
    ('port_profile_switch_nodes', 'FALSE'),
    ('port_prof_ignore_file', '(null)'),
    ('hop_weights_file', '(null)'),
    ('port_search_ordering_file', '(null)'),
    ('routing_engine', '(null)'),
    ('avoid_throttled_links', 'FALSE'),
    ('connect_roots', 'FALSE'),
    ('use_ucast_cache', 'FALSE'),
    ('lid_matrix_dump_file', '(null)'),
    ('lfts_file', '(null)'),
    ('root_guid_file', '(null)'),
    ('cn_guid_file', '(null)'),
    ('io_guid_file', '(null)'),
    ('quasi_ftree_indexing', 'FALSE'),
    ('max_reverse_hops', '0'),
    ('ids_guid_file', '(null)'),
    ('guid_routing_order_file', '(null)'),
    ('do_mesh_analysis', 'FALSE'),
    ('lash_start_vl', '0'),
    ('nue_max_num_vls', '1'),
    ('nue_include_switches', 'FALSE'),
    ('port_shifting', 'FALSE'),
    ('scatter_ports', '0'),
    ('guid_routing_order_no_scatter', 'FALSE'),
    ('sa_db_file', '(null)'),
    ('sa_db_dump', 'FALSE'),
    ('torus_config', '/etc/opensm/torus-2QoS.conf'),
    ('sm_priority', '0'),
    ('ignore_other_sm', 'FALSE'),
    ('sminfo_polling_timeout', '10000'),
    ('polling_retry_number', '4'),
    ('honor_guid2lid_file', 'FALSE'),
    ('max_wire_smps', '4'),
    ('max_wire_smps2', '4'),
    ('max_smps_timeout', '600000'),
    ('transaction_timeout', '200'),
    ('transaction_retries', '3'),
    ('long_transaction_timeout', '500'),
    ('max_msg_fifo_timeout', '10000'),
    ('single_thread', 'FALSE'),
    ('daemon', 'FALSE'),
    ('sm_inactive', 'FALSE'),
    ('babbling_port_policy', 'FALSE'),
    ('drop_event_subscriptions', 'FALSE'),
    ('ipoib_mcgroup_creation_validation', 'TRUE'),
    ('mcgroup_join_validation', 'TRUE'),
    ('use_original_extended_sa_rates_only', 'FALSE'),
    ('use_optimized_slvl', 'FALSE'),
    ('fsync_high_avail_files', 'TRUE'),
    ('perfmgr', 'FALSE'),
    ('perfmgr_redir', 'TRUE'),
    ('perfmgr_sweep_time_s', '180'),
    ('perfmgr_max_outstanding_queries', '500'),
    ('perfmgr_ignore_cas', 'FALSE'),
    ('perfmgr_rm_nodes', 'TRUE'),
    ('perfmgr_log_errors', 'TRUE'),
    ('perfmgr_query_cpi', 'TRUE'),
    ('perfmgr_xmit_wait_log', 'FALSE'),
    ('perfmgr_xmit_wait_threshold', '65535'),
    ('event_db_dump_file', '(null)'),
    ('event_plugin_name', '(null)'),
    ('event_plugin_options', '(null)'),
    ('node_name_map_name', '(null)'),
    ('log_flags', '0x03'),
    ('force_log_flush', 'FALSE'),
    ('log_file', '/var/log/opensm.log'),
    ('log_max_size', '0'),
    ('accum_log_file', 'TRUE'),
    ('per_module_logging_file', '/etc/opensm/per-module-logging.conf'),
    ('dump_files_dir', '/var/log/'),
    ('enable_quirks', 'FALSE'),
    ('no_clients_rereg', 'FALSE'),
    ('disable_multicast', 'FALSE'),
    ('exit_on_fatal', 'TRUE'),
    ('console', 'off'),
    ('console_port', '10000'),
    ('qos', 'FALSE'),
    ('qos_policy_file', '/etc/opensm/qos-policy.conf'),
    ('suppress_sl2vl_mad_status_errors', 'FALSE'),
    ('qos_max_vls', '0'),
    ('qos_high_limit', '-1'),
    ('qos_vlarb_high', '(null)'),
    ('qos_vlarb_low', '(null)'),
    ('qos_sl2vl', '(null)'),
    ('qos_ca_max_vls', '0'),
    ('qos_ca_high_limit', '-1'),
    ('qos_ca_vlarb_high', '(null)'),
    ('qos_ca_vlarb_low', '(null)'),
    ('qos_ca_sl2vl', '(null)'),
    ('qos_sw0_max_vls', '0'),
    ('qos_sw0_high_limit', '-1'),
    ('qos_sw0_vlarb_high', '(null)'),
    ('qos_sw0_vlarb_low', '(null)'),
    ('qos_sw0_sl2vl', '(null)'),
    ('qos_swe_max_vls', '0'),
    ('qos_swe_high_limit', '-1'),
    ('qos_swe_vlarb_high', '(null)'),
    ('qos_swe_vlarb_low', '(null)'),
    ('qos_swe_sl2vl', '(null)'),
    ('qos_rtr_max_vls', '0'),
    ('qos_rtr_high_limit', '-1'),
    ('qos_rtr_vlarb_high', '(null)'),
    ('qos_rtr_vlarb_low', '(null)'),
    ('qos_rtr_sl2vl', '(null)'),
    ('congestion_control', 'FALSE'),
    ('cc_key', '0x0000000000000000'),
    ('cc_max_outstanding_mads', '500'),
    ('cc_sw_cong_setting_control_map', '0x0'),
    ('cc_sw_cong_setting_victim_mask', '0x0000000000000000000000000000000000000000000000000000000000000000'),
    ('cc_sw_cong_setting_credit_mask', '0x0000000000000000000000000000000000000000000000000000000000000000'),
    ('cc_sw_cong_setting_threshold', '0x00'),
    ('cc_sw_cong_setting_packet_size', '0'),
    ('cc_sw_cong_setting_credit_starvation_threshold', '0x00'),
    ('cc_sw_cong_setting_credit_starvation_return_delay', '0:0'),
    ('cc_sw_cong_setting_marking_rate', '0'),
    ('cc_ca_cong_setting_port_control', '0x0000'),
    ('cc_ca_cong_setting_control_map', '0x0000'),
    ('cc_ca_cong_setting_ccti_timer', '0 0'),
    ('cc_ca_cong_setting_ccti_increase', '0 0'),
    ('cc_ca_cong_setting_trigger_threshold', '0 0'),
    ('cc_ca_cong_setting_ccti_min', '0 0'),
    ('cc_cct', '(null)'),
    ('prefix_routes_file', '/etc/opensm/prefix-routes.conf'),
    ('consolidate_ipv6_snm_req', 'FALSE'),
    ('log_prefix', '(null)'),
)
"""(option, default value as ``opensm -c`` writes it), in the file's order."""

OPTION_NAMES: frozenset[str] = frozenset(name for name, _ in DEFAULTS)

ROUTING_OPTIONS = ("routing_engine", "root_guid_file", "lmc", "lfts_file")
"""The options that choose the subnet manager's routing (:mod:`ibemu.routing`; applied by
:mod:`ibemu.scenario.opensm_routing`): the engine list, the updn/ftree roots, the LMC and
the file engine's LFT dump."""

ENGINES = ("minhop", "updn", "dnup", "file", "ftree", "lash", "dor", "torus-2QoS", "nue", "dfsssp", "sssp")
"""OpenSM 3.3's routing engines (opensm/osm_opensm.c ``routing_modules``, man opensm(8),
REFERENCE-FABRICS §3); ``routing_engine`` is a comma list of them, tried in order, then
minhop unless the list holds ``no_fallback``."""
NO_FALLBACK = "no_fallback"


def default_conf(overrides: dict[str, str] | None = None) -> str:
    """A complete opensm.conf in OpenSM 3.3's format: a comment header, then every
    option of :data:`DEFAULTS` as ``name value`` with a blank line after it, values from
    *overrides* where given (a value with a newline gives several lines, e.g. the per-SL
    options)."""
    over = overrides or {}
    out = ["#", "# opensm.conf: OpenSM %s options with their defaults (written by ibemu)" % OPENSM_VERSION, "#", ""]
    for name, value in DEFAULTS:
        for v in over.get(name, value).split("\n"):
            out.append("%s %s" % (name, v))
        out.append("")
    return "\n".join(out)

// Ingress: classification, routing, buffer admission with PFC XOFF, SFC triggering and conversion.
#ifndef LOSSLESS_INGRESS_P4
#define LOSSLESS_INGRESS_P4

control LosslessIngress(inout headers_t hdr,
                        inout metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    counter(DROP_REASONS, CounterType.packets_and_bytes) drop_reasons;
    counter(PORT_CLASSES, CounterType.packets) xoff_transitions;
    counter(PORT_CLASSES, CounterType.packets_and_bytes) lossless_violations;
    counter(PORT_CLASSES, CounterType.packets_and_bytes) headroom_admits;
    // Packets the PG's thresholds turned away (SONiC's PG drop counter), and every drop by
    // ingress port (the port's RX_DRP).
    counter(PORT_CLASSES, CounterType.packets_and_bytes) pg_dropped;
    counter(512, CounterType.packets_and_bytes) port_rx_dropped;
    counter(512, CounterType.packets) mac_control_received;
    counter(512, CounterType.packets) sfc_received;
    counter(512, CounterType.packets) sfc_triggered;
    counter(512, CounterType.packets) sfc_suppressed;
    meter(PUNT_REASONS, MeterType.packets) copp;

    // SFC_DEDUP_PER_SOURCE: last time (us) an SFC signal went to a source, plus one (0:
    // never), by a hash of its address. A collision only suppresses a signal early.
    register<bit<48>>(4096) sfc_last_sent;

    // SONiC's PG watermarks per (ingress port, PG), in bytes, until the controller clears them:
    // the peak of what the PG held in the shared pool (beyond its reserved size, outside its
    // headroom) and in its headroom (pg_headroom_bytes): SAI's
    // SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES and _XOFF_ROOM_WATERMARK_BYTES,
    // which `show priority-group watermark shared|headroom` prints. A PG only grows at
    // admission, so the peaks are taken there.
    register<bit<32>>(PORT_CLASSES) pg_shared_peak;
    register<bit<32>>(PORT_CLASSES) pg_headroom_peak;

    // Set by the controller: thresholds of this packet's (ingress port, PG).
    bit<32> reserved_bytes = 0;
    bit<32> xoff_th = 0;
    bit<32> headroom_bytes = 0;
    bit<32> xon_floor = 0;
    bit<32> xon_offset_bytes = 0;
    bit<1> lossless_dynamic = 0;
    bit<48> refresh_us = 0;
    bit<32> lossy_static_th = 0;
    bit<8> dyn_shift_left = 0;
    bit<8> dyn_shift_right = 0;
    bit<1> lossy_dynamic = 0;
    bit<1> has_profile = 0;
    bit<32> pool_bytes = 0;
    bit<48> sfc_interval_us = 0;

    // Set by the controller: SFC at this packet's (egress port, queue).
    bit<1> sfc_enabled = 0;
    bit<32> sfc_threshold = 0;
    bit<32> sfc_target = 0;
    bit<32> sfc_us_per_byte_q24 = 0;
    bit<6> sfc_signal_dscp = 0;

    action drop_for(bit<32> reason) {
        meta.dropped = 1;
        mark_to_drop(standard_metadata);
        drop_reasons.count(reason);
        port_rx_dropped.count((bit<32>)standard_metadata.ingress_port);
    }

    // --- switch-wide settings -------------------------------------------------------------

    action set_switch_config(bit<32> shared_pool_bytes, bit<48> sfc_min_interval_us) {
        pool_bytes = shared_pool_bytes;
        sfc_interval_us = sfc_min_interval_us;
    }

    table switch_config {
        actions = { set_switch_config; }
        default_action = set_switch_config(0, 0);
        size = 1;
    }

    // --- classification: SAI QoS maps bound per port ------------------------------------

    action set_port_qos(bit<1> trust_dscp, bit<8> dscp_to_tc_map, bit<8> dot1p_to_tc_map,
                        bit<8> tc_to_pg_map, bit<8> tc_to_queue_map, bit<3> default_tc) {
        meta.trust_dscp = trust_dscp;
        meta.dscp_map = dscp_to_tc_map;
        meta.dot1p_map = dot1p_to_tc_map;
        meta.tc_pg_map = tc_to_pg_map;
        meta.tc_queue_map = tc_to_queue_map;
        meta.tc = default_tc;
    }

    table port_qos {
        key = { standard_metadata.ingress_port: exact @name("port"); }
        actions = { set_port_qos; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action set_tc(bit<3> tc) {
        meta.tc = tc;
    }

    table dscp_to_tc {
        key = {
            meta.dscp_map: exact @name("map");
            meta.dscp: exact @name("dscp");
        }
        actions = { set_tc; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    table dot1p_to_tc {
        key = {
            meta.dot1p_map: exact @name("map");
            hdr.vlan.pcp: exact @name("pcp");
        }
        actions = { set_tc; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action set_pg(bit<3> pg) {
        meta.pg = pg;
    }

    table tc_to_pg {
        key = {
            meta.tc_pg_map: exact @name("map");
            meta.tc: exact @name("tc");
        }
        actions = { set_pg; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action set_queue(bit<3> queue) {
        meta.queue = queue;
    }

    table tc_to_queue {
        key = {
            meta.tc_queue_map: exact @name("map");
            meta.tc: exact @name("tc");
        }
        actions = { set_queue; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    // --- routing: SAI route -> next hop (group) -> neighbour -> router interface ---------

    table router_mac {
        key = { hdr.ethernet.dst_addr: exact @name("dst_mac"); }
        actions = { NoAction; }
        default_action = NoAction();
        size = 64;
    }

    action punt(bit<8> reason) {
        meta.punt_reason = reason;
    }

    action set_nexthop_id(bit<16> nexthop_id) {
        meta.nexthop_id = nexthop_id;
        meta.routed = 1;
    }

    action set_ecmp_group_id(bit<16> ecmp_group_id) {
        meta.ecmp_group_id = ecmp_group_id;
    }

    action trap() {
        meta.punt_reason = PUNT_IP2ME;
    }

    action drop_route() {
        drop_for(DROP_ROUTE_ACTION);
    }

    action no_route() {
        drop_for(DROP_NO_ROUTE);
    }

    table ipv4_route {
        key = { hdr.ipv4.dst_addr: lpm @name("dst"); }
        actions = { set_nexthop_id; set_ecmp_group_id; trap; drop_route; no_route; }
        const default_action = no_route();
        size = IPV4_ROUTES;
    }

    table ipv6_route {
        key = { hdr.ipv6.dst_addr: lpm @name("dst"); }
        actions = { set_nexthop_id; set_ecmp_group_id; trap; drop_route; no_route; }
        const default_action = no_route();
        size = IPV6_ROUTES;
    }

    // RoCEv2 puts its entropy in the UDP source port, so the 5-tuple spreads QPs over members.
    // CRC32, not CRC16: bmv2 picks member hash % n, and flipping any of the low 11 bits of the
    // UDP source port flips only bit 0 of CRC-16/ARC's low 4 bits here, so QPs that differ in
    // the source port alone reach 2 of 4, 8 or 16 members; CRC-32 spreads them over all.
    action_selector(HashAlgorithm.crc32, ECMP_MEMBERS, 32) ecmp_selector;

    table ecmp_group {
        key = {
            meta.ecmp_group_id: exact @name("group");
            meta.flow_src: selector;
            meta.flow_dst: selector;
            meta.flow_proto: selector;
            meta.l4_src: selector;
            meta.l4_dst: selector;
        }
        actions = { set_nexthop_id; }
        implementation = ecmp_selector;
        size = ECMP_GROUPS;
    }

    action set_ip_nexthop(bit<16> rif, ipv6_addr_t neighbor_ip) {
        meta.rif = rif;
        meta.neighbor_ip = neighbor_ip;
    }

    table nexthop {
        key = { meta.nexthop_id: exact @name("nexthop_id"); }
        actions = { set_ip_nexthop; no_route; }
        const default_action = no_route();
        size = NEXTHOPS;
    }

    action set_dst_mac(mac_t dst_mac) {
        hdr.ethernet.dst_addr = dst_mac;
    }

    action no_neighbor() {
        drop_for(DROP_NO_NEIGHBOR);
    }

    table neighbor {
        key = {
            meta.rif: exact @name("rif");
            meta.neighbor_ip: exact @name("ip");
        }
        actions = { set_dst_mac; no_neighbor; }
        const default_action = no_neighbor();
        size = NEIGHBORS;
    }

    action set_port_and_src_mac(port_t port, mac_t src_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
    }

    table router_interface {
        key = { meta.rif: exact @name("rif"); }
        actions = { set_port_and_src_mac; no_route; }
        const default_action = no_route();
        size = ROUTER_INTERFACES;
    }

    // --- buffer admission per (ingress port, PG), SONiC BUFFER_PG semantics -------------

    // Lossless (SONiC BUFFER_PROFILE with xoff): the PG may hold xoff_threshold (size plus a
    // static shared threshold; reserved = size, the part that is not shared) plus, when shared_dynamic, 2^dynamic_th x the free shared buffer;
    // above that it pauses (refreshing every refresh_us while at or above XON) and absorbs
    // in-flight bytes in xoff_size of headroom. It resumes below max(xon, pause point -
    // xon_offset), or below xon when xon_offset is 0.
    action set_lossless(bit<32> reserved, bit<32> xoff_threshold, bit<32> xoff_size,
                        bit<32> xon_threshold, bit<32> xon_offset, bit<1> shared_dynamic,
                        bit<8> shift_left, bit<8> shift_right, bit<8> class_enable,
                        bit<16> quanta, bit<48> refresh_interval_us) {
        has_profile = 1;
        meta.lossless = 1;
        reserved_bytes = reserved;
        xoff_th = xoff_threshold;
        headroom_bytes = xoff_size;
        xon_floor = xon_threshold;
        xon_offset_bytes = xon_offset;
        lossless_dynamic = shared_dynamic;
        dyn_shift_left = shift_left;
        dyn_shift_right = shift_right;
        meta.class_enable = class_enable;
        meta.pause_quanta = quanta;
        refresh_us = refresh_interval_us;
    }

    action set_lossy_static(bit<32> threshold) {
        has_profile = 1;
        lossy_static_th = threshold;
    }

    // SONiC dynamic_th: threshold = 2^dynamic_th x free shared buffer, as a shift either way.
    action set_lossy_dynamic(bit<8> shift_left, bit<8> shift_right) {
        has_profile = 1;
        lossy_dynamic = 1;
        dyn_shift_left = shift_left;
        dyn_shift_right = shift_right;
    }

    table pg_profile {
        key = {
            standard_metadata.ingress_port: exact @name("port");
            meta.pg: exact @name("pg");
        }
        actions = { set_lossless; set_lossy_static; set_lossy_dynamic; NoAction; }
        default_action = NoAction();
        size = PORT_CLASSES;
    }

    // --- timed PFC refresh, driven by the switch's packet generator ----------------------

    // The controller gives each packet of the refresh application (by batch and packet id)
    // one lossless (port, PG) and that PG's pause as set_lossless has it (README.md, "Timed
    // refresh"). A table of its own: pg_profile is applied once, on the arrival path.
    port_t refresh_port = 0;
    bit<3> refresh_pg = 0;

    action set_refresh(port_t port, bit<3> pg, bit<8> class_enable, bit<16> quanta,
                       bit<48> refresh_interval_us) {
        refresh_port = port;
        refresh_pg = pg;
        meta.class_enable = class_enable;
        meta.pause_quanta = quanta;
        refresh_us = refresh_interval_us;
    }

    table pfc_refresh {
        key = {
            hdr.pktgen.app_id: exact @name("app");
            hdr.pktgen.batch_id: exact @name("batch");
            hdr.pktgen.packet_id: exact @name("packet");
        }
        actions = { set_refresh; NoAction; }
        default_action = NoAction();
        size = PORT_CLASSES;
    }

    // --- Source Flow Control at the congestion point ------------------------------------

    // duration_us = (depth - target) x us_per_byte_q24 >> 24, with us_per_byte the inverse of
    // the queue's drain rate (8e6 / port bps), given in Q8.24 because P4 has no division.
    action set_sfc(bit<32> threshold, bit<32> target, bit<32> us_per_byte_q24, bit<6> dscp) {
        sfc_enabled = 1;
        sfc_threshold = threshold;
        sfc_target = target;
        sfc_us_per_byte_q24 = us_per_byte_q24;
        sfc_signal_dscp = dscp;
    }

    table sfc_queue {
        key = {
            standard_metadata.egress_spec: exact @name("port");
            meta.queue: exact @name("queue");
        }
        actions = { set_sfc; NoAction; }
        default_action = NoAction();
        size = PORT_CLASSES;
    }

    // SFC messages carry the data packet's DSCP; the source ToR maps it to the priority to pause
    // with its host ports' DSCP_TO_TC_MAP (priority = TC for lossless classes, as SONiC does).
    action set_sfc_priority(bit<3> prio) {
        meta.class_enable = (bit<8>)1 << prio;
    }

    // How signals are deduplicated and what the message carries (defaults: the public
    // reference's). version: the message's version byte; fixed_src_port: UDP source port 1674
    // instead of the data packet's.
    bit<2> sfc_dedup = SFC_DEDUP_TWO_BANK;

    action set_sfc_mode(bit<2> dedup, bit<8> version, bit<1> fixed_src_port) {
        sfc_dedup = dedup;
        meta.sfc_version = version;
        meta.sfc_fixed_port = fixed_src_port;
    }

    table sfc_mode {
        actions = { set_sfc_mode; }
        default_action = set_sfc_mode(SFC_DEDUP_TWO_BANK, 0, 0);
        size = 1;
    }

    table sfc_dscp_to_priority {
        key = { hdr.sfc.dscp: exact @name("dscp"); }
        actions = { set_sfc_priority; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        if (standard_metadata.parser_error != error.NoError) {
            drop_for(DROP_PARSER_ERROR);
            exit;
        }
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            meta.kind = KIND_CONTROL;
            exit;
        }
        // A generated packet stands for one (port, PG): while that PG is paused (egress has not
        // seen it fall below XON), renew the pause every refresh interval, arrivals or not. The
        // packet itself goes nowhere.
        if (hdr.pktgen.isValid()) {
            mark_to_drop(standard_metadata);
            meta.kind = KIND_CONTROL;
            if (pfc_refresh.apply().hit) {
                bit<32> refresh_index = port_class(refresh_port, refresh_pg);
                bit<1> held;
                pg_paused.read(held, refresh_index);
                bit<48> paused_at;
                pg_last_pause.read(paused_at, refresh_index);
                bit<48> at = standard_metadata.ingress_global_timestamp;
                if (held == 1 && at - paused_at >= refresh_us) {
                    pg_last_pause.write(refresh_index, at);
                    meta.clone_kind = KIND_PFC;
                    clone_preserving_field_list(CloneType.I2E,
                        PORT_SESSION_BASE + (bit<32>)refresh_port, FL_CLONE);
                }
            }
            exit;
        }
        // MAC control frames are consumed by the port; any that reach the pipeline are counted.
        if (hdr.pfc.isValid()) {
            mac_control_received.count((bit<32>)standard_metadata.ingress_port);
            drop_for(DROP_MAC_CONTROL);
            exit;
        }

        switch_config.apply();
        port_qos.apply();
        if (meta.trust_dscp == 1 && (hdr.ipv4.isValid() || hdr.ipv6.isValid())) {
            dscp_to_tc.apply();
        } else if (hdr.vlan.isValid()) {
            dot1p_to_tc.apply();
        }
        tc_to_pg.apply();
        tc_to_queue.apply();
        standard_metadata.priority = meta.queue;

        if (hdr.arp.isValid()) {
            meta.punt_reason = PUNT_ARP;
        } else if (hdr.icmpv6.isValid() && (hdr.icmpv6.type == ICMPV6_NEIGHBOR_SOLICIT
                                            || hdr.icmpv6.type == ICMPV6_NEIGHBOR_ADVERT)) {
            meta.punt_reason = PUNT_ND;
        } else if (hdr.ipv4.isValid() || hdr.ipv6.isValid()) {
            if (!router_mac.apply().hit) {
                drop_for(DROP_NOT_ROUTER_MAC);
                exit;
            }
            if (hdr.ipv4.isValid()) {
                ipv4_route.apply();
            } else {
                ipv6_route.apply();
            }
            if (meta.ecmp_group_id != 0) {
                ecmp_group.apply();
            }
        }

        if (meta.punt_reason != 0) {
            bit<2> color;
            copp.execute_meter((bit<32>)meta.punt_reason, color);
            if (color == METER_RED) {
                drop_for(DROP_COPP);
                exit;
            }
            standard_metadata.egress_spec = CPU_PORT;
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in.reason = meta.punt_reason;
            meta.kind = KIND_PUNT;
            exit;
        }
        if (meta.routed == 0) {
            if (meta.dropped == 0) {
                drop_for(DROP_NO_ROUTE);
            }
            exit;
        }

        // TTL: expire at the router that would send it on with zero.
        if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ttl <= 1) {
                drop_for(DROP_TTL_EXPIRED);
                exit;
            }
            hdr.ipv4.hdr_checksum = csum16_replace(hdr.ipv4.hdr_checksum,
                                                   hdr.ipv4.ttl ++ hdr.ipv4.protocol,
                                                   (hdr.ipv4.ttl - 1) ++ hdr.ipv4.protocol);
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        } else if (hdr.ipv6.isValid()) {
            if (hdr.ipv6.hop_limit <= 1) {
                drop_for(DROP_TTL_EXPIRED);
                exit;
            }
            hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
        }
        nexthop.apply();
        neighbor.apply();
        router_interface.apply();
        if (meta.dropped == 1) {
            exit;
        }

        // A received SFC message is forwarded like any packet, except to a host port that
        // pauses hosts (checked in egress, where the port is known with its rate).
        if (hdr.sfc.isValid()) {
            sfc_received.count((bit<32>)standard_metadata.ingress_port);
            sfc_dscp_to_priority.apply();
            meta.sfc_duration_us = hdr.sfc.duration_us;
            meta.kind = KIND_SFC;
            exit;
        }

        // Admission into the ingress priority group.
        bit<32> pg_index = port_class(standard_metadata.ingress_port, meta.pg);
        bit<32> occupancy;
        pg_bytes.read(occupancy, pg_index);
        bit<32> headroom_used;
        pg_headroom_bytes.read(headroom_used, pg_index);
        bit<32> pool_used;
        shared_pool_used.read(pool_used, 0);
        meta.acct_len = standard_metadata.packet_length;
        bit<32> after = occupancy + meta.acct_len;
        pg_profile.apply();
        // SONiC dynamic_th: 2^dynamic_th x the shared buffer still free (saturated to 32 bits).
        bit<32> free = 0;
        if (pool_bytes > pool_used) {
            free = pool_bytes - pool_used;
        }
        bit<64> dynamic_wide = ((bit<64>)free << dyn_shift_left) >> dyn_shift_right;
        bit<32> dynamic_th = dynamic_wide > 0xffffffff ? 32w0xffffffff : (bit<32>)dynamic_wide;
        // What the PG holds outside its headroom (reserved and shared) after this packet, and
        // how much of the packet goes into headroom instead; a PG without a lossless profile
        // has no reserved part and no headroom.
        bit<32> held = (occupancy |-| headroom_used) + meta.acct_len;
        bit<32> to_headroom = 0;
        bit<32> shared_use = after;
        bit<32> headroom_use = 0;
        if (has_profile == 1 && meta.lossless == 1) {
            // The PG pauses once it holds more than its reserved size and shared threshold.
            bit<32> pause_at = xoff_th;
            if (lossless_dynamic == 1) {
                pause_at = xoff_th |+| dynamic_th;
            }
            meta.xon_th = xon_floor;
            if (xon_offset_bytes != 0 && (pause_at |-| xon_offset_bytes) > xon_floor) {
                meta.xon_th = pause_at |-| xon_offset_bytes;
            }
            bit<1> paused;
            pg_paused.read(paused, pg_index);
            // SAI_BUFFER_PROFILE_ATTR_XOFF_TH is "the maximum available buffer for a PG after
            // XOFF is generated (i.e. headroom buffer)": what arrives while the PG is paused,
            // and the part of a packet beyond the pause point, is the in-flight traffic the
            // headroom exists for, so it counts there, whatever the pause point does since.
            // The dynamic pause point falls as other PGs fill the pool, below what a paused
            // PG already holds; counted against the pause point, that would leave no room
            // for the bytes still on the wire (issue 18, "Missing 7").
            if (paused == 1) {
                to_headroom = meta.acct_len;
            } else if (held > pause_at) {
                to_headroom = held - pause_at;
                if (to_headroom > meta.acct_len) {
                    to_headroom = meta.acct_len;
                }
            }
            headroom_use = headroom_used |+| to_headroom;
            if (headroom_use > headroom_bytes) {
                lossless_violations.count(pg_index);
                pg_dropped.count(pg_index);
                drop_for(DROP_LOSSLESS_VIOLATION);
                exit;
            }
            if (to_headroom != 0) {
                headroom_admits.count(pg_index);
                pg_headroom_bytes.write(pg_index, headroom_use);
            }
            shared_use = (held - to_headroom) |-| reserved_bytes;
            bit<48> last;
            pg_last_pause.read(last, pg_index);
            bit<48> now = standard_metadata.ingress_global_timestamp;
            bit<1> send_pause = 0;
            if (paused == 0 && to_headroom != 0) {
                xoff_transitions.count(pg_index);
                pg_paused.write(pg_index, 1);
                send_pause = 1;
            } else if (paused == 1 && after >= meta.xon_th && now - last >= refresh_us) {
                // Still above XON: renew the pause before the sender's timer runs out. Kept
                // beside the timed refresh: it is the only one on bmv2, and both share
                // pg_last_pause, so together they still send one XOFF per interval.
                send_pause = 1;
            }
            if (send_pause == 1) {
                pg_last_pause.write(pg_index, now);
                meta.clone_kind = KIND_PFC;
                clone_preserving_field_list(CloneType.I2E,
                    PORT_SESSION_BASE + (bit<32>)standard_metadata.ingress_port, FL_CLONE);
            }
        } else if (has_profile == 1) {
            bit<32> threshold = lossy_static_th;
            if (lossy_dynamic == 1) {
                threshold = dynamic_th;
            }
            if (after > threshold) {
                pg_dropped.count(pg_index);
                drop_for(DROP_LOSSY_THRESHOLD);
                exit;
            }
        }
        pg_bytes.write(pg_index, after);
        bit<32> peak;
        pg_shared_peak.read(peak, pg_index);
        if (shared_use > peak) {
            pg_shared_peak.write(pg_index, shared_use);
        }
        pg_headroom_peak.read(peak, pg_index);
        if (headroom_use > peak) {
            pg_headroom_peak.write(pg_index, headroom_use);
        }
        // Headroom lies outside the shared pool (the controller's shared_pool_bytes leaves out
        // the ingress pool's xoff), so its bytes do not lower anyone's dynamic threshold.
        shared_pool_used.write(0, pool_used + (meta.acct_len - to_headroom));
        bit<32> queue_index = port_class(standard_metadata.egress_spec, meta.queue);
        bit<32> queue_depth;
        queue_bytes.read(queue_depth, queue_index);
        queue_bytes.write(queue_index, queue_depth + meta.acct_len);
        meta.kind = KIND_DATA;

        // Source Flow Control: a RoCEv2 packet (IPv4 or IPv6) into a queue past the SFC
        // threshold makes the switch signal its source, unless sfc_mode's deduplication
        // suppresses it. A PFC clone of the same packet takes precedence (one clone per
        // packet); the next packet signals.
        sfc_mode.apply();
        bit<48> sfc_now = standard_metadata.ingress_global_timestamp;
        // The reference's epoch advances on a packet whatever its type, once more than the
        // window has passed since the epoch began (or the 32-bit microsecond clock wrapped);
        // here on every packet admitted.
        bit<32> epoch;
        sfc_epoch.read(epoch, 0);
        if (sfc_dedup == SFC_DEDUP_TWO_BANK) {
            bit<32> now_us = (bit<32>)sfc_now;
            bit<32> epoch_start;
            sfc_epoch_start.read(epoch_start, 0);
            if ((bit<48>)(now_us - epoch_start) > sfc_interval_us || now_us < epoch_start) {
                epoch = epoch + 1;
                sfc_epoch.write(0, epoch);
                sfc_epoch_start.write(0, now_us);
            }
        }
        if (hdr.bth.isValid() && meta.clone_kind == 0) {
            sfc_queue.apply();
            if (sfc_enabled == 1 && queue_depth > sfc_threshold) {
                bool suppress = false;
                if (sfc_dedup == SFC_DEDUP_TWO_BANK) {
                    // Suppressed when both hashes of (source, destination, DSCP) were already
                    // set in this epoch; both are set either way.
                    bit<32> slot0;
                    bit<32> slot1;
                    hash(slot0, HashAlgorithm.crc16, 32w0,
                         { meta.flow_src, meta.flow_dst, meta.dscp }, (bit<32>)SFC_FILTER_SLOTS);
                    hash(slot1, HashAlgorithm.crc32, 32w0,
                         { meta.flow_src, meta.flow_dst, meta.dscp }, (bit<32>)SFC_FILTER_SLOTS);
                    bit<32> tag = epoch + 1;
                    bit<32> seen0;
                    bit<32> seen1;
                    if (epoch[0:0] == 0) {
                        sfc_bank0_filter0.read(seen0, slot0);
                        sfc_bank0_filter1.read(seen1, slot1);
                        sfc_bank0_filter0.write(slot0, tag);
                        sfc_bank0_filter1.write(slot1, tag);
                    } else {
                        sfc_bank1_filter0.read(seen0, slot0);
                        sfc_bank1_filter1.read(seen1, slot1);
                        sfc_bank1_filter0.write(slot0, tag);
                        sfc_bank1_filter1.write(slot1, tag);
                    }
                    suppress = seen0 == tag && seen1 == tag;
                } else if (sfc_dedup == SFC_DEDUP_PER_SOURCE) {
                    bit<12> slot;
                    hash(slot, HashAlgorithm.crc16, (bit<12>)0, { meta.flow_src }, (bit<13>)4096);
                    bit<48> last_signal;
                    sfc_last_sent.read(last_signal, (bit<32>)slot);
                    // The slot holds the time of the last signal plus one, so that 0 means
                    // none yet even for a signal at time 0, and the interval is exact.
                    suppress = last_signal != 0 && sfc_now + 1 - last_signal < sfc_interval_us;
                    if (!suppress) {
                        sfc_last_sent.write((bit<32>)slot, sfc_now + 1);
                    }
                }
                if (suppress) {
                    sfc_suppressed.count((bit<32>)standard_metadata.ingress_port);
                } else {
                    bit<64> duration = 0;
                    if (queue_depth > sfc_target) {
                        duration = ((bit<64>)(queue_depth - sfc_target)
                                    * (bit<64>)sfc_us_per_byte_q24) >> 24;
                    }
                    meta.sfc_duration_us = duration > 0xffff ? 16w0xffff : (bit<16>)duration;
                    meta.sfc_dscp = (bit<8>)meta.dscp;
                    meta.sfc_ip_dscp = sfc_signal_dscp;
                    // Used when the source is on one of our own ports: priority = TC, and
                    // none unless the PG is lossless there (a pause on a priority without PFC
                    // is ignored by the host, as the received-message path has it too).
                    meta.class_enable = meta.lossless == 1 ? (bit<8>)1 << meta.tc : 8w0;
                    meta.clone_kind = KIND_SFC;
                    sfc_triggered.count((bit<32>)standard_metadata.ingress_port);
                    clone_preserving_field_list(CloneType.I2E,
                        PORT_SESSION_BASE + (bit<32>)standard_metadata.ingress_port, FL_CLONE);
                }
            }
        }
    }
}

#endif

// Egress: buffer release with PFC XON, ECN marking, and the frames the pipeline generates.
#ifndef LOSSLESS_EGRESS_P4
#define LOSSLESS_EGRESS_P4

control LosslessEgress(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    counter(PORT_CLASSES, CounterType.packets) pfc_sent;
    counter(PORT_CLASSES, CounterType.packets) xon_transitions;
    counter(PORT_CLASSES, CounterType.packets_and_bytes) ecn_marked;
    counter(512, CounterType.packets) sfc_sent;
    counter(512, CounterType.packets) sfc_converted;

    mac_t port_mac = 0;
    bit<1> host_facing = 0;
    bit<32> quanta_per_us = 0;

    // host_facing: the port leads to hosts, so this switch is their source ToR and turns SFC
    // signals for them into PFC. pause_quanta_per_us_q16: pause quanta in one microsecond at the
    // port's rate (port bps / 512 / 1e6) in Q16.16, so that lab rates below 512 Mb/s, where it
    // is below 1, keep their precision (1280 at 10 Mb/s, 3200000 at 25G).
    action set_egress_port(mac_t mac, bit<1> sfc_host_facing, bit<32> pause_quanta_per_us_q16) {
        port_mac = mac;
        host_facing = sfc_host_facing;
        quanta_per_us = pause_quanta_per_us_q16;
    }

    table egress_port {
        key = { standard_metadata.egress_port: exact @name("port"); }
        actions = { set_egress_port; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    bit<1> ecn_enabled = 0;
    bit<32> kmin = 0;
    bit<32> kmax = 0;
    bit<32> slope = 0;

    // WRED_PROFILE with ecn: no mark below min_threshold, above max_threshold always, between
    // them with probability (depth - min) x slope / 2^32, slope = Pmax x 2^32 / (max - min).
    action set_wred_ecn(bit<32> min_threshold, bit<32> max_threshold, bit<32> mark_slope) {
        ecn_enabled = 1;
        kmin = min_threshold;
        kmax = max_threshold;
        slope = mark_slope;
    }

    table queue_wred {
        key = {
            standard_metadata.egress_port: exact @name("port");
            meta.queue: exact @name("queue");
        }
        actions = { set_wred_ecn; NoAction; }
        default_action = NoAction();
        size = PORT_CLASSES;
    }

    // An 802.1Qbb frame pausing the priorities in class_enable for `quanta` (0 resumes).
    action make_pfc(bit<8> class_enable, bit<16> quanta) {
        hdr.ethernet.dst_addr = MAC_CONTROL_DST;
        hdr.ethernet.src_addr = port_mac;
        hdr.ethernet.ether_type = ETHERTYPE_MAC_CONTROL;
        hdr.vlan.setInvalid();
        hdr.arp.setInvalid();
        hdr.ipv4.setInvalid();
        hdr.ipv4_options.setInvalid();
        hdr.ipv6.setInvalid();
        hdr.icmpv6.setInvalid();
        hdr.udp.setInvalid();
        hdr.tcp.setInvalid();
        hdr.bth.setInvalid();
        hdr.sfc.setInvalid();
        hdr.pfc.setValid();
        hdr.pfc.opcode = MAC_CONTROL_OPCODE_PFC;
        hdr.pfc._reserved = 0;
        hdr.pfc.class_enable = class_enable;
        hdr.pfc.time0 = class_enable[0:0] == 1 ? quanta : 0;
        hdr.pfc.time1 = class_enable[1:1] == 1 ? quanta : 0;
        hdr.pfc.time2 = class_enable[2:2] == 1 ? quanta : 0;
        hdr.pfc.time3 = class_enable[3:3] == 1 ? quanta : 0;
        hdr.pfc.time4 = class_enable[4:4] == 1 ? quanta : 0;
        hdr.pfc.time5 = class_enable[5:5] == 1 ? quanta : 0;
        hdr.pfc.time6 = class_enable[6:6] == 1 ? quanta : 0;
        hdr.pfc.time7 = class_enable[7:7] == 1 ? quanta : 0;
        hdr.pad26.setValid();
        hdr.pad26.zero = 0;
        truncate(60);
    }

    // The SFC message as the public reference (switch-p4-16) builds it from the data packet:
    // MACs and addresses swapped, the header's other fields kept but the DSCP (the configured
    // signal DSCP, ECN 0) and the lengths, UDP to 1674 from the data's source port (or 1674,
    // sfc_mode), no UDP checksum over IPv4, payload sfc_pause_h {version, data DSCP, pause in
    // us} and 14 zero bytes. The reference routes its message again after building it, so the
    // TTL it leaves with is the data's less two hops; this switch sends it straight back out
    // of the data's ingress port, the next hop toward the source, with the same TTL.
    action make_sfc_message() {
        mac_t peer = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = peer;
        hdr.tcp.setInvalid();
        hdr.bth.setInvalid();
        if (meta.sfc_fixed_port == 1) {
            hdr.udp.src_port = UDP_PORT_SFC;
        }
        hdr.udp.dst_port = UDP_PORT_SFC;
        hdr.udp.length = 26;
        hdr.udp.checksum = 0;
        hdr.sfc.setValid();
        hdr.sfc.version = meta.sfc_version;
        hdr.sfc.dscp = meta.sfc_dscp;
        hdr.sfc.duration_us = meta.sfc_duration_us;
        hdr.pad14.setValid();
        hdr.pad14.zero = 0;
    }

    action make_sfc_ipv4() {
        ipv4_addr_t source = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = source;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.dscp = meta.sfc_ip_dscp;
        hdr.ipv4.ecn = 0;
        hdr.ipv4.total_len = 46;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 2;
        hdr.ipv4_options.setInvalid();
    }

    // The reference has no IPv6 message; this one is the IPv4 message's IPv6 form (flow label
    // 0), with the UDP checksum IPv6 requires (RFC 8200 8.1), over the pseudo-header.
    action make_sfc_ipv6() {
        ipv6_addr_t source = hdr.ipv6.src_addr;
        hdr.ipv6.src_addr = hdr.ipv6.dst_addr;
        hdr.ipv6.dst_addr = source;
        hdr.ipv6.dscp = meta.sfc_ip_dscp;
        hdr.ipv6.ecn = 0;
        hdr.ipv6.flow_label = 0;
        hdr.ipv6.payload_len = 26;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 2;
        bit<16> sum;
        hash(sum, HashAlgorithm.csum16, 16w0,
             { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, 32w26, 24w0, IP_PROTO_UDP,
               hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length,
               hdr.sfc.version, hdr.sfc.dscp, hdr.sfc.duration_us, hdr.pad14.zero },
             32w65536);
        // RFC 768: a computed 0 is sent as all ones (0 means no checksum).
        hdr.udp.checksum = sum == 0 ? 16w0xffff : sum;
    }

    apply {
        bit<8> pfc_classes = 0;
        bool is_clone = standard_metadata.instance_type == INSTANCE_INGRESS_CLONE
                        || standard_metadata.instance_type == INSTANCE_EGRESS_CLONE;
        // p4-switch's accounting pass: a packet its traffic manager dropped (full buffer,
        // watchdog flush) comes through egress already marked to drop, only to release its
        // bytes. bmv2 starts egress with egress_spec 0 and never drops after ingress but at
        // its own queue limit (README.md, "One truth for occupancy").
        bool tm_dropped = standard_metadata.egress_spec == V1MODEL_DROP_PORT;
        if (!tm_dropped && (is_clone || meta.kind == KIND_SFC)) {
            egress_port.apply();
        }
        if (tm_dropped) {
            // Nothing is sent for a dropped packet: its clone makes no frame.
        } else if (is_clone) {
            if (meta.clone_kind == KIND_PFC) {
                make_pfc(meta.class_enable, meta.pause_quanta);
                pfc_classes = meta.class_enable;
            } else if (meta.clone_kind == KIND_SFC) {
                if (host_facing == 1) {
                    // The source is ours: pause it directly, if its priority has PFC.
                    if (meta.class_enable != 0) {
                        make_pfc(meta.class_enable,
                                 pause_quanta_for(meta.sfc_duration_us, quanta_per_us));
                        pfc_classes = meta.class_enable;
                        sfc_converted.count((bit<32>)standard_metadata.egress_port);
                    } else {
                        mark_to_drop(standard_metadata);
                    }
                } else if ((hdr.ipv4.isValid() && hdr.ipv4.ttl <= 2)
                           || (hdr.ipv6.isValid() && hdr.ipv6.hop_limit <= 2)) {
                    // The reference's message would expire when it is routed: none.
                    mark_to_drop(standard_metadata);
                } else {
                    make_sfc_message();
                    bit<32> length = 60;
                    if (hdr.ipv4.isValid()) {
                        make_sfc_ipv4();
                    } else {
                        make_sfc_ipv6();
                        length = 80;
                    }
                    truncate(hdr.vlan.isValid() ? length + 4 : length);
                    sfc_sent.count((bit<32>)standard_metadata.egress_port);
                }
            }
        }
        // A received SFC message for a host behind this port: we are its source ToR, so it
        // becomes a pause toward the host and goes no further.
        else if (meta.kind == KIND_SFC && host_facing == 1) {
            if (meta.class_enable != 0) {
                make_pfc(meta.class_enable,
                         pause_quanta_for(meta.sfc_duration_us, quanta_per_us));
                pfc_classes = meta.class_enable;
                sfc_converted.count((bit<32>)standard_metadata.egress_port);
            } else {
                mark_to_drop(standard_metadata);
            }
        }
        // Generated PFC frames are counted once for each priority they pause.
        if (pfc_classes != 0) {
            bit<32> base = port_class(standard_metadata.egress_port, 0);
            if (pfc_classes[0:0] == 1) { pfc_sent.count(base); }
            if (pfc_classes[1:1] == 1) { pfc_sent.count(base + 1); }
            if (pfc_classes[2:2] == 1) { pfc_sent.count(base + 2); }
            if (pfc_classes[3:3] == 1) { pfc_sent.count(base + 3); }
            if (pfc_classes[4:4] == 1) { pfc_sent.count(base + 4); }
            if (pfc_classes[5:5] == 1) { pfc_sent.count(base + 5); }
            if (pfc_classes[6:6] == 1) { pfc_sent.count(base + 6); }
            if (pfc_classes[7:7] == 1) { pfc_sent.count(base + 7); }
        }
        if (is_clone || meta.kind != KIND_DATA) {
            exit;
        }

        // Release the packet's bytes from its ingress PG, its queue and the shared pool.
        bit<32> pg_index = port_class(standard_metadata.ingress_port, meta.pg);
        bit<32> occupancy;
        pg_bytes.read(occupancy, pg_index);
        occupancy = occupancy |-| meta.acct_len;
        pg_bytes.write(pg_index, occupancy);
        // The PG's headroom drains first, then its shared and reserved part. We found no
        // vendor document of the order, so it is a choice: it needs no per-packet state across
        // the traffic manager, keeps headroom + the rest == pg_bytes exact, and frees the
        // headroom for the next burst as soon as the PG drains (the ns-3 datacenter
        // simulator's SwitchMmu, inet-tub/ns3-datacenter, drains a PG's headroom first too).
        bit<32> headroom_used;
        pg_headroom_bytes.read(headroom_used, pg_index);
        bit<32> from_headroom = headroom_used < meta.acct_len ? headroom_used : meta.acct_len;
        bit<32> headroom_left = headroom_used - from_headroom;
        // An empty PG holds no headroom, whatever bmv2's unsynchronised read-modify-writes
        // (p4src/README.md, "Notes on targets") left in the register.
        if (occupancy == 0) {
            headroom_left = 0;
        }
        if (headroom_left != headroom_used) {
            pg_headroom_bytes.write(pg_index, headroom_left);
        }
        bit<32> pool_used;
        shared_pool_used.read(pool_used, 0);
        shared_pool_used.write(0, pool_used |-| (meta.acct_len - from_headroom));
        bit<32> queue_index = port_class(standard_metadata.egress_port, meta.queue);
        bit<32> depth;
        queue_bytes.read(depth, queue_index);
        depth = depth |-| meta.acct_len;
        queue_bytes.write(queue_index, depth);

        if (meta.lossless == 1) {
            bit<1> paused;
            pg_paused.read(paused, pg_index);
            // SAI's XON_TH: XON once the PG's total use is below the XON point "and available
            // buffer in the PG buffer is larger than the XOFF_TH", i.e. its headroom is empty
            // again. The XON point came with the packet from its ingress, so with a dynamic
            // threshold it can be older and higher than the pause point now: resuming with
            // headroom still in use would let each XOFF/XON round add the bytes in flight to
            // it faster than the PG drains.
            if (paused == 1 && occupancy < meta.xon_th && headroom_left == 0) {
                pg_paused.write(pg_index, 0);
                xon_transitions.count(pg_index);
                meta.clone_kind = KIND_PFC;
                meta.pause_quanta = 0;
                clone_preserving_field_list(CloneType.E2E,
                    PORT_SESSION_BASE + (bit<32>)standard_metadata.ingress_port, FL_CLONE);
            }
        }
        if (tm_dropped) {
            exit;
        }

        // ECN marking on the depth the packet leaves behind; never on Not-ECT packets.
        queue_wred.apply();
        bit<2> ecn = hdr.ipv4.isValid() ? hdr.ipv4.ecn : hdr.ipv6.ecn;
        if (ecn_enabled == 1 && (hdr.ipv4.isValid() || hdr.ipv6.isValid())
                && ecn != 0 && ecn != 3 && depth > kmin) {
            bool mark = depth >= kmax;
            if (!mark) {
                bit<32> draw;
                random(draw, 32w0, 32w0xffffffff);
                mark = draw < (depth - kmin) * slope;
            }
            if (mark) {
                ecn_marked.count(queue_index);
                if (hdr.ipv4.isValid()) {
                    hdr.ipv4.hdr_checksum = csum16_replace(hdr.ipv4.hdr_checksum,
                        hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn,
                        hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ 2w3);
                    hdr.ipv4.ecn = 3;
                } else {
                    hdr.ipv6.ecn = 3;
                }
            }
        }
    }
}

#endif

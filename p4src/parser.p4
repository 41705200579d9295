// Parser, deparser and checksum controls of the lossless pipeline.
#ifndef LOSSLESS_PARSER_P4
#define LOSSLESS_PARSER_P4

error {
    IPv4HeaderTooShort
}

parser LosslessParser(packet_in packet,
                      out headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            PKTGEN_PORT: parse_pktgen;
            default: parse_ethernet;
        }
    }

    // A generated packet: the pktgen header, then the (zero) Ethernet header the generator
    // puts behind it, which a generated PFC frame is rewritten from.
    state parse_pktgen {
        packet.extract(hdr.pktgen);
        transition parse_ethernet;
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_MAC_CONTROL: parse_mac_control;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_mac_control {
        packet.extract(hdr.pfc);
        transition accept;
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.IPv4HeaderTooShort);
        meta.flow_src = (ipv6_addr_t)hdr.ipv4.src_addr;
        meta.flow_dst = (ipv6_addr_t)hdr.ipv4.dst_addr;
        meta.flow_proto = hdr.ipv4.protocol;
        meta.dscp = hdr.ipv4.dscp;
        transition select(hdr.ipv4.ihl) {
            5: parse_ipv4_payload;
            default: parse_ipv4_options;
        }
    }

    state parse_ipv4_options {
        packet.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
        transition parse_ipv4_payload;
    }

    // Only first fragments carry the L4 header.
    state parse_ipv4_payload {
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_UDP): parse_udp;
            (0, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        meta.flow_src = hdr.ipv6.src_addr;
        meta.flow_dst = hdr.ipv6.dst_addr;
        meta.flow_proto = hdr.ipv6.next_hdr;
        meta.dscp = hdr.ipv6.dscp;
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_TCP: parse_tcp;
            IP_PROTO_ICMPV6: parse_icmpv6;
            default: accept;
        }
    }

    state parse_icmpv6 {
        packet.extract(hdr.icmpv6);
        transition accept;
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.l4_src = hdr.tcp.src_port;
        meta.l4_dst = hdr.tcp.dst_port;
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        meta.l4_src = hdr.udp.src_port;
        meta.l4_dst = hdr.udp.dst_port;
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            UDP_PORT_SFC: parse_sfc;
            default: accept;
        }
    }

    state parse_bth {
        packet.extract(hdr.bth);
        transition accept;
    }

    state parse_sfc {
        packet.extract(hdr.sfc);
        transition accept;
    }
}

// Nothing is verified: like a switch ASIC's forwarding path, a bad IPv4 checksum is forwarded,
// and the checksum is updated incrementally (RFC 1624) wherever a field changes.
control LosslessVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

// Only a generated SFC message gets a checksum computed from scratch (it has no options).
control LosslessComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.sfc.isValid() && hdr.ipv4.isValid() && meta.clone_kind == KIND_SFC,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control LosslessDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.pfc);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.icmpv6);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
        packet.emit(hdr.bth);
        packet.emit(hdr.sfc);
        packet.emit(hdr.pad14);
        packet.emit(hdr.pad26);
    }
}

#endif

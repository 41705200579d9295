/* A small router: LPM + ECMP action_selector, registers, clone, checksums, packet-in/out. */
#include <core.p4>
#define V1MODEL_VERSION 20200408 /* counter<I>, meter<I>; p4c's default is 20180101 */
#include <v1model.p4>
#define CPU_PORT 255

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
const bit<16> ETH_IPV4 = 0x0800;
const bit<16> ETH_VLAN = 16w0x8100;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    mac_t dst;
    mac_t src;
    bit<16> etherType;
}

header vlan_t {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> etherType;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> totalLen;
    bit<16> identification;
    bit<3> flags;
    bit<13> fragOffset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdrChecksum;
    ip4_t srcAddr;
    ip4_t dstAddr;
}

header ipv4_options_t {
    varbit<320> options;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> len;
    bit<16> checksum;
}

header_union l4_u {
    udp_t udp;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t ethernet;
    vlan_t[2] vlan;
    ipv4_t ipv4;
    ipv4_options_t ipv4_options;
    udp_t udp;
}

enum bit<8> Color { GREEN = 0, YELLOW = 1, RED = 2 }
enum Verdict { PASS, DROP }

struct metadata_t {
    @field_list(1) bit<9> ingress_port;
    bit<14> ecmp_select;
    bit<16> l4_src;
    bit<32> meter_color;
    bool seen;
}

struct digest_t {
    mac_t src;
    bit<9> port;
}

error { BadIhl }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t std) {
    value_set<bit<16>>(4) extra_types;

    state start {
        transition select(std.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETH_VLAN: parse_vlan;
            ETH_IPV4: parse_ipv4;
            extra_types: accept;
            0x9000 &&& 0xF000: accept;
            0x1000 .. 0x1FFF: reject;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan.next);
        transition select(hdr.vlan.last.etherType) {
            ETH_VLAN: parse_vlan;
            ETH_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.BadIhl);
        pkt.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        transition select(hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (17, 0): parse_udp;
            (_, _): accept;
        }
    }
    state parse_udp {
        bit<32> peek = pkt.lookahead<bit<32>>();
        meta.l4_src = peek[31:16];
        pkt.extract(hdr.udp);
        pkt.advance(0);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    register<bit<32>, bit<9>>(512) pkt_count;
    counter<bit<9>>(512, CounterType.packets_and_bytes) port_counter;
    direct_counter(CounterType.packets) lpm_counter;
    meter<bit<9>>(512, MeterType.bytes) port_meter;
    action_selector(HashAlgorithm.crc16, 32w1024, 32w14) ecmp_selector;

    action drop() {
        mark_to_drop(std);
    }
    action set_nhop(mac_t dmac, @name("port") bit<9> port) {
        hdr.ethernet.src = hdr.ethernet.dst;
        hdr.ethernet.dst = dmac;
        std.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl |-| 1;
    }
    action send_to_cpu() {
        std.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = std.ingress_port;
    }
    @name("ingress.ipv4_lpm") table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm @name("dst");
        }
        actions = {
            set_nhop;
            drop;
            @defaultonly NoAction;
        }
        counters = lpm_counter;
        size = 1024;
        default_action = NoAction();
    }
    table ecmp {
        key = {
            hdr.ipv4.dstAddr: exact;
            hdr.ipv4.srcAddr: selector;
            hdr.udp.srcPort: selector;
        }
        actions = { set_nhop; }
        implementation = ecmp_selector;
        size = 64;
    }
    table acl {
        key = {
            std.ingress_port: ternary;
            hdr.ethernet.etherType: range;
            hdr.vlan[0].vid: optional;
        }
        actions = { drop; send_to_cpu; NoAction; }
        const default_action = NoAction;
        const entries = {
            (_, 0x0800 .. 0x08FF, _) : NoAction();
            priority = 5: (9w1 &&& 9w0x1FF, _, 12w10) : drop();
            (CPU_PORT, _, _) : send_to_cpu();
        }
        support_timeout = true;
    }

    apply {
        bit<32> count;
        if (hdr.packet_out.isValid()) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        pkt_count.read(count, std.ingress_port);
        pkt_count.write(std.ingress_port, count + 1);
        port_counter.count(std.ingress_port);
        port_meter.execute_meter(std.ingress_port, meta.meter_color);
        switch (acl.apply().action_run) {
            drop: { return; }
            send_to_cpu: {}
            default: {}
        }
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            if (!ipv4_lpm.apply().hit) {
                ecmp.apply();
            }
        } else if (hdr.ipv4.isValid()) {
            drop();
        }
        hash(meta.ecmp_select, HashAlgorithm.crc16, 14w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }, 15w16384);
        meta.ingress_port = std.ingress_port;
        if (std.ingress_port == 1) {
            clone_preserving_field_list(CloneType.I2E, 32w100, 1);
            digest<digest_t>(1, { hdr.ethernet.src, std.ingress_port });
        }
        bit<8> x = hdr.ipv4.isValid() ? 8w1 : 8w2;
        hdr.ipv4.dscp[5:4] = 2w3;
        hdr.ipv4.dscp = (bit<6>)(x >> 2) ^ (bit<6>)(-x & 0x3F);
        random(x, 8w0, 8w255);
        log_msg("port {}", { std.ingress_port });
        hdr.vlan.push_front(1);
        hdr.vlan.pop_front(1);
        bit<64> wide = hdr.ethernet.src ++ 16w0;
        int<8> s = (int<8>)x |+| 8s1;
        if (s < 0 || wide == 0) {
            truncate(64);
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std) {
    apply {
        if (std.instance_type == 1) {
            hdr.ipv4.ecn = 3;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;

/* Semantic coverage: constructs the type checker resolves, infers and folds. Valid P4_16 for
 * p4c's v1model front end as well. */
#include <core.p4>
#define V1MODEL_VERSION 20200408 /* counter<I>, meter<I>; p4c's default is 20180101 */
#include <v1model.p4>
const bit<16> TYPE_VLAN = 0x8100;
const int SHIFT = 4;
const bit<8> FOLDED = (bit<8>)((TYPE_VLAN >> 8) + 16w1) << 1;   // 0x82 << 1 = 0x04
typedef bit<48> mac_t;
type bit<32> flow_id_t;

enum bit<16> EtherType { IPV4 = 0x0800, VLAN = TYPE_VLAN }
enum Verdict { PASS, DROP }
error { BadVersion }

header ethernet_t { mac_t dst; mac_t src; EtherType ether_type; }
header vlan_t { bit<3> pcp; bit<1> dei; bit<12> vid; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> total_len;
    bit<16> id; bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> protocol;
    bit<16> checksum; bit<32> src; bit<32> dst;
}
header opt_t { bit<8> len; varbit<320> data; }
header tcp_t { bit<16> sport; bit<16> dport; }
header udp_t { bit<16> sport; bit<16> dport; }
header_union l4_t { tcp_t tcp; udp_t udp; }

struct headers_t {
    ethernet_t eth;
    vlan_t[2] vlans;
    ipv4_t ipv4;
    opt_t opt;
    l4_t l4;
}

struct key_t { bit<32> src; bit<32> dst; }
struct vlan_key_t { bit<16> ether_type; bit<32> depth; }

struct meta_t {
    bit<16> l4_sport;
    bit<8> counter;
    flow_id_t flow;
    bit<32> hashed;
    bit<1> tagged;
    Verdict verdict;
}

const int IPV4_MIN_BYTES = ipv4_t.minSizeInBytes();
const bit<8> LOCAL_TOP = 2;

bit<8> clamp_ttl(in bit<8> ttl, in bit<8> floor = 8w1) {
    return ttl < floor ? floor : ttl;
}

void count_up(inout bit<8> c, @optional in bit<8> step) {
    c = c |+| 1;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    value_set<bit<16>>(4) extra_types;
    value_set<vlan_key_t>(8) vlan_pairs;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            EtherType.VLAN: parse_vlan;
            EtherType.IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlans.next);
        meta.tagged = 1;
        transition select(hdr.vlans.last.ether_type, hdr.vlans.lastIndex) {
            (0x8100 &&& 0xEFFF, 0): parse_vlan;
            (0x0800, _): parse_ipv4;
            (extra_types, _): accept;
            vlan_pairs: accept;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.BadVersion);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, 6): parse_tcp;
            (5, 17): parse_udp;
            (6 .. 15, _): parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        bit<32> opt_bits = ((bit<32>)hdr.ipv4.ihl - 5) * 32;
        pkt.extract(hdr.opt, opt_bits - 8);
        transition accept;
    }
    state parse_tcp {
        pkt.extract(hdr.l4.tcp);
        transition accept;
    }
    state parse_udp {
        udp_t peek = pkt.lookahead<udp_t>();
        meta.l4_sport = peek.sport;
        pkt.advance(32);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control Rewrite(inout headers_t hdr)(bit<8> new_tos) {
    apply {
        hdr.ipv4.tos = new_tos;
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<8> LOCAL = 7;
    direct_counter(CounterType.packets) route_hits;
    counter<bit<8>>(256, CounterType.bytes) by_tos;
    register<bit<32>, bit<8>>(256) last_len;
    action_profile(64) nexthops;
    Rewrite(8w0x10) rewrite;

    action drop() { mark_to_drop(sm); meta.verdict = Verdict.DROP; }
    action route(bit<9> port, mac_t dmac) {
        sm.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = dmac;
        hdr.ipv4.ttl = clamp_ttl(hdr.ipv4.ttl - 1);
        route_hits.count();
    }
    action set_flow(flow_id_t id) { meta.flow = id; }
    action tag(inout bit<12> vid, bit<12> value) { vid = value; }

    table routes {
        key = {
            hdr.ipv4.dst: lpm @name("dst");
            hdr.ipv4.isValid(): exact;
        }
        actions = { route; drop; @defaultonly NoAction; }
        default_action = NoAction();
        counters = route_hits;
        size = 1024;
    }
    table flows {
        key = {
            hdr.ipv4.src: ternary;
            hdr.l4.tcp.dport: range;
            hdr.ipv4.protocol: optional;
        }
        actions = { set_flow; tag(hdr.vlans[0].vid); }
        const entries = {
            (32w0x0A000000 &&& 32w0xFF000000, 0 .. 1023, 6) : set_flow((flow_id_t)1);
            (_, 1024 .. 65535, _) : set_flow((flow_id_t)3);
            priority = 3 : (0, _, 17) : set_flow((flow_id_t)2);
        }
        const default_action = tag(hdr.vlans[0].vid, 12w0);
    }
    table shared {
        key = { hdr.ipv4.dst: exact; }
        actions = { route; }
        implementation = nexthops;
        support_timeout = true;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            switch (routes.apply().action_run) {
                drop: { return; }
                default: { }
            }
            if (!flows.apply().hit) {
                shared.apply();
            }
            bit<32> wide = hdr.ipv4.src ^ hdr.ipv4.dst;
            hash(meta.hashed, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.protocol }, 32w1 << 16);
            wide[31:24] = hdr.ipv4.tos;
            bit<16> folded = wide[15:0] + wide[31:16];
            bit<24> joined = hdr.ipv4.tos ++ folded;
            int<16> signed = (int<16>)folded;
            signed = signed |-| 16s100;
            meta.counter = (bit<8>)(joined >> SHIFT) & 0x0F;
            last_len.write(hdr.ipv4.ttl, (bit<32>)hdr.ipv4.total_len);
            by_tos.count(hdr.ipv4.tos);
            count_up(meta.counter);
            count_up(c = meta.counter, step = LOCAL);
            bit<32> random_port;
            random(random_port, 32w0, 32w511);
            rewrite.apply(hdr);
            key_t k = { src = hdr.ipv4.src, dst = hdr.ipv4.dst };
            digest<key_t>(1, k);
            meta.hashed = (bit<32>)(meta.flow) + (bit<32>)FOLDED + (bit<32>)IPV4_MIN_BYTES;
        }
        if (hdr.vlans[0].isValid() && hdr.vlans[1].isValid()) {
            hdr.vlans.pop_front(1);
        } else if (meta.tagged == 0) {
            hdr.vlans.push_front(1);
            hdr.vlans[0].setValid();
            hdr.vlans[0] = { 0, 0, 1, (bit<16>)hdr.eth.ether_type };
            hdr.eth.ether_type = EtherType.VLAN;
        }
        switch (hdr.ipv4.protocol) {
            6:
            17: { meta.l4_sport = hdr.l4.tcp.isValid() ? hdr.l4.tcp.sport : hdr.l4.udp.sport; }
            default: { }
        }
        if (sm.parser_error == error.BadVersion) {
            drop();
            exit;
        }
        {
            bit<8> shadow = LOCAL;
            {
                bit<8> shadow2 = shadow + .LOCAL_TOP;
                log_msg("shadow2={}", { shadow2 });
            }
        }
    }
}


control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            truncate(64);
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.vlans);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.l4);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;

// Table keys of every compiled form (tests/compiled.rs): an IPv6 address alone (16 bytes, probed
// as a number) and behind an exact field (18 bytes), a validity bit, a ternary wide field.
// keys.json: build/bin/p4-compile --target bmv2 --arch v1model -o DIR keys.p4

#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ip6_t {
    bit<4> version; bit<8> tc; bit<20> flow; bit<16> len; bit<8> nh; bit<8> hl;
    bit<128> src; bit<128> dst;
}
struct headers_t { eth_t eth; ip6_t ip6; }
struct meta_t { bit<12> vrf; bit<3> pri; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) { 0x86dd: ip6; default: accept; }
    }
    state ip6 { pkt.extract(hdr.ip6); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply {} }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_port(bit<9> p) { sm.egress_spec = p; }
    action set_vrf(bit<12> v, bit<3> p) { meta.vrf = v; meta.pri = p; }
    action drop() { mark_to_drop(sm); }
    table port_vrf {
        key = { sm.ingress_port: exact; hdr.ip6.isValid(): exact; hdr.eth.ether_type & 0xff0f: exact; }
        actions = { set_vrf; drop; }
    }
    table route6 {
        key = { hdr.ip6.dst: lpm; }
        actions = { set_port; drop; }
    }
    table vrf_route6 {
        key = { meta.vrf: exact; hdr.ip6.dst: lpm; }
        actions = { set_port; drop; }
    }
    table acl6 {
        key = { hdr.ip6.src: ternary; meta.pri: range; hdr.eth.src: exact; }
        actions = { set_port; drop; }
    }
    apply {
        port_vrf.apply();
        if (meta.vrf == 0) { route6.apply(); } else { vrf_route6.apply(); }
        acl6.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control CC(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ip6); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;

/* The program p4runtime-shell drives in test_shell.py. Every P4Runtime object it writes is
 * observable in packet-ins: a packet-out with egress_port 0 goes through the tables, and the
 * packet_in header reports which entry sent it (tag), the meter colour, the register's value
 * before this packet and the replica it is (egress_rid, instance_type). */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255
/* The tag of packets no table entry matched. */
#define MISS 0xff
/* The tag of packet-outs sent straight to their egress_port. */
#define DIRECT 0xee

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> index;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> instance_type;
    bit<16> egress_rid;
    bit<8> tag;
    bit<8> color;
    bit<32> reg_value;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t ethernet;
}

struct metadata_t {
    bit<7> index;
    bit<8> tag;
    bit<8> color;
    bit<32> reg_value;
}

parser ShellParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
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
        transition accept;
    }
}

control ShellVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ShellIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    counter(128, CounterType.packets_and_bytes) index_counter;
    meter(128, MeterType.packets) index_meter;
    register<bit<32>>(128) index_register;
    direct_counter(CounterType.packets_and_bytes) fwd_counter;
    action_selector(HashAlgorithm.crc16, 32w64, 32w10) ecmp_selector;

    action to_cpu(bit<8> tag) {
        std.egress_spec = CPU_PORT;
        meta.tag = tag;
    }
    action flood(bit<16> group) {
        std.mcast_grp = group;
    }
    action mirror(bit<32> session, bit<8> tag) {
        clone(CloneType.I2E, session);
        std.egress_spec = CPU_PORT;
        meta.tag = tag;
    }
    action drop() {
        mark_to_drop(std);
    }

    table fwd {
        key = {
            hdr.ethernet.dst: exact;
        }
        actions = { to_cpu; flood; mirror; drop; }
        counters = fwd_counter;
        default_action = drop();
        size = 64;
    }
    table ecmp {
        key = {
            hdr.ethernet.dst: exact;
            hdr.ethernet.src: selector;
        }
        actions = { to_cpu; }
        implementation = ecmp_selector;
        size = 64;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            meta.index = hdr.packet_out.index;
            if (hdr.packet_out.egress_port != 0) {
                std.egress_spec = hdr.packet_out.egress_port;
                meta.tag = DIRECT;
                hdr.packet_out.setInvalid();
                exit;
            }
            hdr.packet_out.setInvalid();
        }
        index_counter.count((bit<32>)meta.index);
        index_meter.execute_meter((bit<32>)meta.index, meta.color);
        index_register.read(meta.reg_value, (bit<32>)meta.index);
        index_register.write((bit<32>)meta.index, meta.reg_value + 1);
        if (!fwd.apply().hit) {
            if (!ecmp.apply().hit) {
                to_cpu(MISS);
            }
        }
    }
}

control ShellEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {
    apply {
        if (std.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = std.ingress_port;
            hdr.packet_in.instance_type = (bit<7>)std.instance_type;
            hdr.packet_in.egress_rid = std.egress_rid;
            hdr.packet_in.tag = meta.tag;
            hdr.packet_in.color = meta.color;
            hdr.packet_in.reg_value = meta.reg_value;
        }
    }
}

control ShellComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ShellDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(ShellParser(), ShellVerifyChecksum(), ShellIngress(), ShellEgress(),
         ShellComputeChecksum(), ShellDeparser()) main;

/* Locals declared in a control's apply block and used on both sides of a table or an `if`
 * (the BMv2 backend lowers statements back to front: every statement must name the same
 * scalar for a local). Expected packets in control_locals.stf. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control V(inout headers hdr, inout meta_t m) { apply { } }

control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>>(4) r;
    bit<8> add = 0;

    action set_add(bit<8> v) { add = v; }
    table t {
        key = { hdr.h.op: exact; }
        actions = { set_add; NoAction; }
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        // Read into a local, then branch on it and use it after a table.
        bit<8> stored;
        r.read(stored, 0);
        bit<8> sum = stored + hdr.h.a;
        if (sum > 10) {
            hdr.h.b = 0xbb;
        }
        t.apply();
        hdr.h.a = sum + add;
        r.write(0, sum);
    }
}

control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;

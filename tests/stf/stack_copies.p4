// Whole headers copied to and from stack elements chosen at run time (`s[i]`, `s.last`),
// `s[i].isValid()` and `s[i].setInvalid()`,
// and a header with a struct-typed field (p4c flattens it into the header).
#include <core.p4>
#include <v1model.p4>

struct pair_t {
    bit<4> hi;
    bit<4> lo;
}

header sel_h {
    bit<8> idx;
    bit<8> op;
}

header item_h {
    bit<8> v;
    pair_t p;
}

struct headers {
    sel_h     sel;
    item_h[3] items;
    item_h    saved;
}

struct meta_t { }

parser P(packet_in pkt, out headers h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.sel);
        pkt.extract(h.items.next);
        pkt.extract(h.items.next);
        pkt.extract(h.items.next);
        h.saved = h.items.last;
        transition accept;
    }
}

control MyIngress(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.sel.op == 1) {
            h.items[0] = h.items[h.sel.idx];
        } else if (h.sel.op == 2) {
            h.items[h.sel.idx] = h.saved;
        } else if (h.sel.op == 3 && h.items[h.sel.idx].isValid()) {
            h.items[h.sel.idx].setInvalid();
        }
        h.saved.p.lo = h.items[1].p.hi;
    }
}

control MyEgress(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control MyVerify(inout headers h, inout meta_t m) { apply { } }
control MyCompute(inout headers h, inout meta_t m) { apply { } }

control D(packet_out pkt, in headers h) {
    apply {
        pkt.emit(h.sel);
        pkt.emit(h.items);
        pkt.emit(h.saved);
    }
}

V1Switch(P(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), D()) main;

/* Front/midend semantics through the BMv2 backend: copy-in/copy-out with aliasing, argument
 * evaluation order, return in functions and sub-controls, exit in actions, switch on
 * action_run, header stacks. Expected packets in midend.stf. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header s_t { bit<8> v; }
struct headers { h_t h; s_t[2] s; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            0xF0 &&& 0xF0: stack;
            default: accept;
        }
    }
    state stack {
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control V(inout headers hdr, inout meta_t m) { apply { } }

control Sub(inout h_t x) {
    apply {
        x.d = x.d + 1;
        if (x.d == 10) {
            return;
        }
        x.d = x.d + 100;
    }
}

bit<8> incr(inout bit<8> v) {
    v = v + 1;
    return v;
}

bit<8> pick(in bit<8> v) {
    if (v > 5) {
        return 1;
    }
    return 2;
}

control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    Sub() sub;
    action alias(inout bit<8> x, inout bit<8> y) { x = 1; y = 2; }
    action swap(inout bit<8> x, inout bit<8> y) { bit<8> t = x; x = y; y = t; }
    action stop() { hdr.h.c = 0xEE; exit; }
    action set_b(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { hdr.h.a: exact; }
        actions = { set_b; stop; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        switch (t.apply().action_run) {
            set_b: { hdr.h.d = 0x11; }
            default: {
                if (hdr.h.a == 1) {
                    alias(hdr.h.b, hdr.h.b);
                } else if (hdr.h.a == 2) {
                    swap(hdr.h.b, hdr.h.c);
                } else if (hdr.h.a == 3) {
                    hdr.h.b = hdr.h.c + incr(hdr.h.c);
                } else if (hdr.h.a == 4) {
                    sub.apply(hdr.h);
                } else if (hdr.h.a == 5) {
                    hdr.h.b = pick(hdr.h.c);
                } else if (hdr.h.a == 6) {
                    switch (hdr.h.c) {
                        1: { hdr.h.d = 0x10; }
                        2:
                        3: { hdr.h.d = 0x23; }
                        default: { hdr.h.d = 0xDD; }
                    }
                }
            }
        }
        if (hdr.s[1].isValid()) {
            hdr.s.pop_front(1);
        }
        hdr.h.a = hdr.h.a | 0x80;
    }
}

control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.s);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;

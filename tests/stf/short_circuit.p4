/* `&&`, `||` and `?:` with a function call where it may not run, in an action, an apply-block
 * condition and apply-block straight-line code: the call (which counts in its inout argument)
 * runs only when the left operand does not decide the result, or when its branch is chosen
 * (P4_16 spec, 8.6 and 8.5). The midend's `side-effects` pass turns these into `if`s. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> n_and;
    bit<8> r_and;
    bit<8> n_or;
    bit<8> r_or;
    bit<8> t;
    bit<8> k;
}
struct headers { h_t h; }
struct meta_t { bit<8> unused; }

/* Adds 1 to c; when v is 0 returns false, else adds 0x10 more and returns true. */
bool count(inout bit<8> c, in bit<8> v) {
    c = c + 1;
    if (v == 0) {
        return false;
    }
    c = c + 0x10;
    return true;
}

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action and_in_action(inout bit<8> n) {
        bool r = hdr.h.a == 1 && count(n, hdr.h.b);
        hdr.h.r_and = r ? 8w1 : 8w0;
    }
    apply {
        sm.egress_spec = 1;
        bit<8> n = 0;
        and_in_action(n);
        hdr.h.n_and = n;
        bit<8> n2 = 0;
        if (hdr.h.a == 1 || count(n2, hdr.h.b)) {
            hdr.h.r_or = 1;
        } else {
            hdr.h.r_or = 0;
        }
        hdr.h.n_or = n2;
        bit<8> k = 0;
        hdr.h.t = hdr.h.a == 1 ? 8w0 : (count(k, hdr.h.b) ? 8w1 : 8w2);
        hdr.h.k = k;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;

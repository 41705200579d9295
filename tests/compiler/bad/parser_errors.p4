/* Parsers: states, select keysets, statements that belong elsewhere. */
#include <core.p4>

header h_t { bit<8> a; bit<16> b; }
struct s_t { h_t h; h_t[2] stack; }

parser NoStart(packet_in pkt, out s_t s) {
    state first {
        transition accept;
    }
}

parser P(packet_in pkt, out s_t s) {
    state start {
        pkt.extract(s.h);
        transition select(s.h.a, s.h.b) {
            (1, 2): accept;
            (1, 2, 3): reject;
            3: accept;
            (0x1FF, 0): accept;
            (s.h.a, 0): accept;
            default: next;
        }
    }
    state next {
        exit;
        s.stack.push_front(1);
        transition select(s.h.a) {
            1 .. 2: accept;
            8w1 &&& 16w3: accept;
        }
    }
}

control C(inout s_t s) {
    value_set<bit<8>>(4) vs;
    apply {
        s.stack.next.a = 1;
        bit<32> i = s.stack.lastIndex;
        s.stack[2].a = 1;
        s.stack.push_front(s.h.a);
    }
}

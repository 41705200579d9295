/* Parse-level coverage of P4_16 constructs not in the router. */
#include <core.p4>
#include <v1model.p4>

typedef bit<32> u32;
type bit<9> port_t;
const int BIG = 1 << 70;
const bool FLAG = true && !false || false;
const int<8> NEG = -8s5;
const bit<8> PREC = 1 + 2 * 3 & 0xF ^ 0x1 | 0x10;

header H { bit<8> a; bit<8> b; }
header Hv { bit<8> len; varbit<64> data; }
struct Pair<T> { T first; T second; }
header_union U { H h; Hv v; }
struct S { H[3] stack; U u; tuple<bit<8>, bool> t; Pair<bit<4>> p; }

enum bit<16> EtherType { IPV4 = 0x0800, IPV6 = 0x86dd, }
enum Plain { A, B, C }
error { MyError, OtherError }
match_kind { my_kind }

extern Checker<T> {
    Checker(bit<32> size);
    void check(in T value);
    abstract bit<16> combine(in T a, in T b);
    T get<U2>(in U2 x);
}

extern bit<8> ext_fn<T>(in T value, int rounds);

bit<8> max8(in bit<8> a, in bit<8> b) {
    if (a > b) {
        return a;
    }
    return b;
}

T pick<T>(in bool c, in T a, in T b) {
    return c ? a : b;
}

void twice(inout bit<8> x) {
    x = x + x;
    return;
}

parser SubParser(packet_in pkt, out H h) {
    state start {
        pkt.extract(h);
        transition accept;
    }
}

parser P(packet_in pkt, out S s, inout Pair<bit<4>> meta, inout standard_metadata_t sm) {
    SubParser() sub;
    H tmp;
    const bit<8> K = 2;
    state start {
        H la = pkt.lookahead<H>();
        bit<8> l = la.a;
        transition select(l, la.b) {
            (0 .. 3, 8w0 &&& 8w1): s0;
            (K, _): s1;
            default: reject;
        }
    }
    state s0 {
        sub.apply(pkt, tmp);
        pkt.extract(s.stack.next);
        pkt.extract(s.stack[1]);
        s.stack[2].setValid();
        transition select(s.stack.lastIndex) {
            0: s1;
            default: accept;
        }
    }
    state s1 {
        if (s.stack[0].a == 1) {
            s.stack[0].b = 2;
        } else {
            s.stack[0].b = 3;
        }
        pkt.extract(s.u.v, (bit<32>)s.stack[0].a);
        transition accept;
    }
}

control Inner(inout H h)(bit<8> init) {
    apply {
        h.a = init;
    }
}

control Ing(inout S s, inout Pair<bit<4>> meta, inout standard_metadata_t sm) {
    Inner(8w3) inner;
    Checker<bit<8>>(16) checker = {
        bit<16> combine(in bit<8> a, in bit<8> b) {
            return a ++ b;
        }
    };
    bit<8> counter_local = 0;
    @name(".global_action") action ga(@name("v") bit<8> v) { s.stack[0].a = v; }
    action with_dirs(inout bit<8> x, in bit<8> y, bit<8> z) { x = y + z; }
    table t {
        key = { s.stack[0].a: exact @name("a"); s.stack[0].b & 0xF0: ternary; }
        actions = { ga; .NoAction; }
        const default_action = ga(1);
        entries = {
            const (1, 0x10 &&& 0xF0) : ga(2);
            @priority(3) (2, _) : NoAction();
        }
        @my_annotation size = 32;
        idle_timeout = true;
    }
    apply {
        inner.apply(s.stack[0]);
        checker.check(s.stack[0].a);
        bit<8> a = max8(s.stack[0].a, 8w4);
        twice(a);
        a = pick<bit<8>>(true, a, 1);
        a = pick(false, a, 2);
        with_dirs(a, 1, 2);
        s.t = { 8w1, true };
        Pair<bit<4>> p = { first = 1, second = 2 };
        meta = p;
        bit<16> wide = (bit<16>)a << 4 >> 2;
        wide[15:8] = a;
        int<16> sw = (int<16>)wide;
        sw = sw |-| 16s1;
        bool b = wide >= 16w3 && wide <= 16w10 || wide != 0;
        b = !(a == 1) ? b : !b;
        a = ~a + 8w7 % 3 / 1 - 1;
        a = (bit<8>)EtherType.IPV4;
        EtherType et = (EtherType)16w0x86dd;
        Plain pl = Plain.B;
        error e = error.MyError;
        switch (pl) {
            Plain.A:
            Plain.B: { a = 1; }
            default: { a = 2; }
        }
        switch (t.apply().action_run) {
            ga: {}
            NoAction: { exit; }
        }
        if (t.apply().miss) { return; }
        a = ext_fn(a, 3);
        sm.egress_spec = (bit<9>)(port_t)9w1;
        bit<32> sz = s.stack.size;
        s.stack.push_front(2);
        s.stack.pop_front(1);
        if (s.u.h.isValid()) { s.u.h.setInvalid(); }
        log_msg("a={} b={}", { a, b });
        assert(a != 0);
        assume(a != 1);
        u32 x = 32w0xFFFF_FFFF;
        x = x |+| 1;
        {
            bit<8> shadow = 1;
            {
                bit<8> shadowed = shadow;
            }
        }
    }
}

control Eg(inout S s, inout Pair<bit<4>> meta, inout standard_metadata_t sm) { apply { } }
control VC(inout S s, inout Pair<bit<4>> meta) { apply { } }
control CC(inout S s, inout Pair<bit<4>> meta) { apply { } }
control D(packet_out pkt, in S s) {
    apply {
        pkt.emit(s.stack);
        pkt.emit(s.u);
    }
}

V1Switch<S, Pair<bit<4>>>(P(), VC(), Ing(), Eg(), CC(), D()) main;

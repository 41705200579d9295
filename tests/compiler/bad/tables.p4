/* Tables: action lists, default actions, entries and properties. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }

control C(inout h_t h) {
    action set(bit<8> v) { h.a = v; }
    action fwd(inout bit<8> x, bit<8> v) { x = v; }
    table t1 {
        key = { h.a: exact; h.b: fuzzy; }
        actions = { set; nosuch; fwd; }
        default_action = NoAction();
    }
    table t2 {
        key = { h.a: exact; h.b: ternary; }
        actions = { set; fwd(h.b); }
        const entries = {
            (1, 2 &&& 3) : set(1);
            (1 &&& 1, 2) : set(2);
            (1) : set(3);
            (1, 2) : set(h.a);
            (1, 2) : NoAction();
        }
        size = 16;
        size = 32;
    }
    table t4 {
        key = { h.a: exact; }
        actions = { fwd(h.a); }
        default_action = fwd(h.b, 1);
    }
    table t5 {
        actions = { @tableonly set; @defaultonly NoAction; }
        default_action = set(1);
        entries = { (1) : NoAction(); }
    }
    table t6 {
        key = { h.a: exact; }
        actions = { set; @defaultonly NoAction; }
        entries = { (1) : NoAction(); }
    }
    table t3 {
        key = { h.a: exact; }
        actions = { set; }
        default_action = set;
    }
    action bad() { t3.apply(); }
    apply {
        switch (t2.apply().action_run) {
            set: { h.a = 1; }
            NoAction: { h.a = 2; }
            default: { }
        }
        if (t3.apply().hits) { h.a = 3; }
        if (t3.apply().action_run == t3.apply().action_run) { h.a = 4; }
    }
}

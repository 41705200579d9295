/* Calls: argument counts, directions, l-values and types. */
#include <core.p4>

header h_t { bit<8> a; bit<8> b; }

extern E {
    E(bit<32> size);
    void get(out bit<8> x);
}

bit<8> f(in bit<8> x, out bit<8> y) {
    y = x;
    x = 1;                           // in parameter is read-only
    return x;
}

action top_action() { }

bit<8> calls_action(in bit<8> x) {
    top_action();
    return x;
}

bit<8> no_return(in bit<8> x) {
    if (x == 1) {
        return 2;
    }
}

control C(inout h_t h) {
    E(16) e;
    E() e2;                          // no such constructor
    action set(bit<8> v) { h.a = v; }
    apply {
        bit<8> r;
        r = f(h.a);                  // missing argument
        r = f(h.a, h.b, h.a);        // too many arguments
        r = f(h.a, 1);               // out argument must be an l-value
        r = f(x = h.a, z = r);       // no parameter named z
        r = f(h.a, y = r);           // mixing positional and named arguments
        e.get(h.a + 1);              // l-value
        e.put(1);                    // no such method
        set();                       // action called without its argument
        h.isValid(1);                // isValid takes no arguments
        verify(true, error.NoError); // verify belongs in parsers
        e.get(_);
        f(_, r);                     // '_' only for out parameters
    }
}

control D(inout h_t h, in bit<8> ro) {
    E((bit<32>)h.a) e3;              // constructor argument not compile-time known
    action pass_in(in bit<8> x) { f(x, x); }   // 'in' parameter as an out argument
    apply {
        bit<4> n;
        f(ro, n);                    // out argument of the wrong width
        f(ro, ro);                   // 'in' parameter as an out argument
    }
}

extern void defaults(out bit<32> x = 0, @optional bit<32> y = 0);

extern Dir { Dir(in bit<8> size); }
control WithCtor(inout h_t h)(inout bit<8> k) {
    action sw() { switch (h.a) { 1: { h.b = 1; } 1: { h.b = 2; } } }
    apply { }
}

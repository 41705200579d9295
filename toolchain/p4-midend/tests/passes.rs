//! The midend's passes on small programs: what they leave prints as P4 that checks again, no
//! function is called from a parser state after `parser-inline`, and states with nothing to
//! hoist are left as they were.

use p4_sema::ir::{CallTarget, DeclKind, ExprKind, Program};
use p4_syntax::{Diagnostics, SourceMap};

const PRELUDE: &str = "
extern packet_in { void extract<T>(out T hdr); }
header h_t { bit<8> a; bit<8> b; }
";

fn check(src: &str) -> Program {
    let map = SourceMap::new("t.p4", src.to_string());
    let mut d = Diagnostics::default();
    let ast = p4_syntax::parse(&map, &mut d);
    let p = p4_sema::check(&ast, &mut d);
    assert!(!d.has_errors(), "{}\n{src}", d.render(&map));
    p.unwrap()
}

fn state_calls_functions(p: &Program) -> bool {
    let mut found = false;
    for d in &p.decls {
        if let DeclKind::State { .. } = d.kind {
            let one = Program {
                decls: vec![d.clone()],
                ..Program::default()
            };
            one.for_each_expr(&mut |e| {
                if let ExprKind::Call(c) = &e.kind {
                    found |= matches!(c.target, CallTarget::Function(_));
                }
            });
        }
    }
    found
}

fn run_all(p: &mut Program) {
    p4_midend::run(p);
}

#[test]
fn inlined_parser_prints_as_p4_that_checks_again() {
    let src = format!(
        "{PRELUDE}
bit<8> twice(in bit<8> x) {{ bit<8> y = x + x; return y; }}
bool first(inout bit<8> c, in bit<8> v) {{
    c = c + 1;
    if (v == 0) {{ return false; }}
    return twice(c) != 0;
}}
parser P(packet_in pkt, out h_t h) {{
    state start {{
        pkt.extract(h);
        bit<8> n = 0;
        bool r = h.a == 1 && first(n, h.b) || first(n, 2);
        h.b = (r ? twice(n) : 8w7) + twice(h.a);
        transition select(first(n, h.b)) {{ true: accept; default: reject; }}
    }}
}}
"
    );
    let mut p = check(&src);
    assert!(state_calls_functions(&p));
    run_all(&mut p);
    assert!(!state_calls_functions(&p));
    let printed = p4_sema::print::to_p4(&p);
    // `first(n, 2)`: the constant is used in place and `2 == 0` folded away with its branch.
    assert!(
        !printed.contains("8w2 == 8w0") && !printed.contains("if (false)"),
        "{printed}"
    );
    let again = check(&printed);
    // Printing the re-checked program gives the same text: nothing was lost on the way, and
    // nothing was left that the front end would still fold.
    assert_eq!(p4_sema::print::to_p4(&again), printed);
}

#[test]
fn states_without_calls_to_order_are_untouched() {
    let src = format!(
        "{PRELUDE}
parser P(packet_in pkt, out h_t h) {{
    state start {{
        pkt.extract(h);
        h.b = h.a + 1;
        transition select(h.a) {{ 1: accept; default: reject; }}
    }}
}}
"
    );
    let mut p = check(&src);
    let before = p4_sema::print::to_p4(&p);
    let decls = p.decls.len();
    run_all(&mut p);
    assert_eq!(p4_sema::print::to_p4(&p), before);
    assert_eq!(p.decls.len(), decls);
}

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

/// Whether an action or function body calls an action or a function.
fn bodies_call_actions_or_functions(p: &Program) -> bool {
    let mut found = false;
    for d in &p.decls {
        if let DeclKind::Action { .. } | DeclKind::Function { .. } = d.kind {
            let one = Program {
                decls: vec![d.clone()],
                ..Program::default()
            };
            one.for_each_expr(&mut |e| {
                if let ExprKind::Call(c) = &e.kind {
                    found |= matches!(c.target, CallTarget::Function(_) | CallTarget::Action(_));
                }
            });
        }
    }
    found
}

#[test]
fn inlined_actions_print_as_p4_that_checks_again() {
    let src = format!(
        "{PRELUDE}
bit<8> clamp(in bit<8> v, in bit<8> hi) {{ if (v > hi) {{ return hi; }} return v + 1; }}
match_kind {{ exact }}
control C(inout h_t h) {{
    action add(inout bit<8> x, bit<8> k) {{ x = x + k; }}
    action twice(inout bit<8> x, inout bit<8> y) {{ add(x, 1); add(y, x); }}
    action set_exit(inout bit<8> x, inout bit<8> y) {{ x = 1; y = 2; exit; }}
    action pick(inout bit<8> x) {{ switch (x) {{ 1: 2: {{ x = 5; }} default: {{ x = 3; }} }} }}
    action stop(inout bit<8> x) {{ twice(x, x); pick(h.b); h.b = clamp(h.b, h.a); set_exit(x, x); }}
    table t {{ key = {{ h.a: exact; }} actions = {{ stop(h.a); }} }}
    apply {{ t.apply(); }}
}}
"
    );
    let mut p = check(&src);
    assert!(bodies_call_actions_or_functions(&p));
    run_all(&mut p);
    assert!(!bodies_call_actions_or_functions(&p));
    let printed = p4_sema::print::to_p4(&p);
    // `switch` in an action: `if`s on a copy of the value, the two labels sharing a body.
    assert!(!printed.contains("switch ("), "{printed}");
    assert!(
        printed.contains("if (((sw == 8w1) || (sw == 8w2))) {"),
        "{printed}"
    );
    // The `exit` of `set_exit(x, x)` inlined into `stop` first copies both parameters back
    // into stop's `x`, in parameter order.
    let stop = &printed[printed.find("action stop").expect("stop")..];
    let lines: Vec<&str> = stop.lines().map(str::trim).collect();
    let exit_at = lines.iter().position(|l| *l == "exit;").expect("exit kept");
    assert!(
        lines[exit_at - 2].starts_with("x = ") && lines[exit_at - 1].starts_with("x = "),
        "{stop}"
    );
    let again = check(&printed);
    assert_eq!(p4_sema::print::to_p4(&again), printed);
}

#[test]
fn table_actions_with_bound_arguments_become_copies_with_the_same_names() {
    let src = format!(
        "{PRELUDE}
match_kind {{ exact }}
action top(out bit<8> y) {{ y = 1; }}
control C(inout h_t h) {{
    action set(inout bit<8> x, bit<8> v) {{ x = v; if (v == 0) {{ return; }} x = x + 1; }}
    table t {{
        key = {{ h.a: exact; }}
        actions = {{ set(h.b); top(h.a); }}
        default_action = set(h.b, 3);
    }}
    apply {{ switch (t.apply().action_run) {{ set: {{ h.a = 1; }} default: {{ }} }} }}
}}
"
    );
    let mut p = check(&src);
    run_all(&mut p);
    let table = p
        .decls
        .iter()
        .find_map(|d| match &d.kind {
            DeclKind::Table(t) => Some(t.clone()),
            _ => None,
        })
        .expect("table");
    let name = |a: p4_sema::ir::DeclId| {
        p4_syntax::ast::find_annotation(&p.decl(a).annotations, "name")
            .and_then(|n| n.string_arg())
            .map(str::to_string)
    };
    // Each bound action is a copy without directional parameters, named as the original was
    // (a local action by its name under the control, a top-level one from the top level).
    for ar in &table.actions {
        let DeclKind::Action { params, .. } = &p.decl(ar.action).kind else {
            panic!("not an action");
        };
        assert!(params.iter().all(|x| x.dir.is_none()) && ar.args.is_empty());
    }
    assert_eq!(name(table.actions[0].action).as_deref(), Some("set"));
    assert_eq!(name(table.actions[1].action).as_deref(), Some(".top"));
    // The default action is the list's copy, with its action data alone.
    let default = table.default_action.expect("default action");
    assert_eq!(default.action, table.actions[0].action);
    assert_eq!(default.args.len(), 1);
    let printed = p4_sema::print::to_p4(&p);
    assert!(!printed.contains("return;"), "{printed}");
    let again = check(&printed);
    assert_eq!(p4_sema::print::to_p4(&again), printed);
}

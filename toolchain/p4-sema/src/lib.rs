//! The semantic front end of `p4-compile`: name resolution, type checking and inference and
//! constant folding over the `p4_syntax` AST, producing the typed IR in [`ir`].

mod check;
pub mod eval;
mod expr;
pub mod ir;
pub mod print;
pub mod uses;

use p4_syntax::{ast, Diagnostics};

/// Checks a parsed program. Reports every independent error in `diags` and returns the typed
/// program only when there were none (warnings do not count).
pub fn check(program: &ast::Program, diags: &mut Diagnostics) -> Option<ir::Program> {
    let before = diags.error_count();
    let mut c = check::Checker::new(diags);
    c.program(program);
    let mut p = c.p;
    p.control_plane_uses = uses::control_plane_uses(&p);
    if diags.error_count() == before {
        // Every path that gives up on an expression reports why; should one not, the program
        // must still not be accepted half-typed.
        p.for_each_expr(&mut |e| {
            if e.ty == ir::Type::Unknown {
                diags.unsupported(e.span, "this expression could not be typed");
            }
        });
    }
    if diags.error_count() > before {
        None
    } else {
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::ir::*;
    use num_bigint::BigInt;
    use p4_syntax::{ast, Diagnostics, SourceMap};

    fn run(src: &str) -> (Option<Program>, String) {
        let map = SourceMap::new("t.p4", src.to_string());
        let mut d = Diagnostics::default();
        let ast = p4_syntax::parse(&map, &mut d);
        assert!(!d.has_errors(), "{}", d.render(&map));
        let p = super::check(&ast, &mut d);
        (p, d.render(&map))
    }

    fn ok(src: &str) -> Program {
        let (p, diags) = run(src);
        p.unwrap_or_else(|| panic!("{diags}"))
    }

    fn constant(p: &Program, name: &str) -> (Type, Value) {
        let d = p
            .decls
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no {name}"));
        match &d.kind {
            DeclKind::Const { ty, value } => (ty.clone(), value.clone()),
            k => panic!("{name} is {k:?}"),
        }
    }

    fn int(v: i64) -> Value {
        Value::Int(BigInt::from(v))
    }

    #[test]
    fn integer_literals_take_the_width_of_their_target() {
        let (p, diags) = run("const bit<8> A = 300; const int<4> B = -9; const int C = 1 << 70;");
        let p = p.unwrap();
        assert_eq!(constant(&p, "A"), (Type::Bit(8), int(44)));
        assert_eq!(constant(&p, "B"), (Type::Int(4), int(7)));
        assert_eq!(constant(&p, "C").1, Value::Int(BigInt::from(1) << 70u32));
        assert!(
            diags.contains("warning: value 300 does not fit in bit<8>"),
            "{diags}"
        );
        assert!(
            diags.contains("warning: value -9 does not fit in int<4>"),
            "{diags}"
        );
    }

    #[test]
    fn constants_fold_through_names_casts_slices_and_concatenation() {
        let p = ok("const bit<8> A = 0xAB;
             const bit<16> B = (bit<16>)A << 4 | 16w1;
             const bit<4> C = B[11:8];
             const bit<12> D = C ++ A;
             const bool E = D == 12w0xAAB && !(A < 8w3);
             const int<8> F = (int<8>)A;
             const bit<8> G = 8w250 |+| 8w10;");
        assert_eq!(constant(&p, "B"), (Type::Bit(16), int(0xAB1)));
        assert_eq!(constant(&p, "C"), (Type::Bit(4), int(0xA)));
        assert_eq!(constant(&p, "D"), (Type::Bit(12), int(0xAAB)));
        assert_eq!(constant(&p, "E"), (Type::Bool, Value::Bool(true)));
        assert_eq!(constant(&p, "F"), (Type::Int(8), int(-85)));
        assert_eq!(constant(&p, "G"), (Type::Bit(8), int(255)));
    }

    #[test]
    fn sizes_enums_and_typedefs_fold() {
        let p = ok("header H { bit<4> a; bit<12> b; varbit<32> v; }
             enum bit<16> E { X = 0x800, Y = 5 }
             typedef bit<9> port_t;
             const int MIN = H.minSizeInBits();
             const int MAXB = H.maxSizeInBytes();
             const bit<16> EX = (bit<16>)E.X;
             const port_t P = 511;");
        assert_eq!(constant(&p, "MIN"), (Type::InfInt, int(16)));
        assert_eq!(constant(&p, "MAXB"), (Type::InfInt, int(6)));
        assert_eq!(constant(&p, "EX"), (Type::Bit(16), int(0x800)));
        assert_eq!(constant(&p, "P"), (Type::Bit(9), int(511)));
    }

    #[test]
    fn names_resolve_to_declarations_and_expressions_carry_types() {
        let p = ok("header H { bit<8> a; }
             control C(inout H h) {
                 bit<8> x = 1;
                 apply { x = h.a + 2; }
             }");
        let DeclKind::Control { apply, .. } = &p.decls.iter().find(|d| d.name == "C").unwrap().kind
        else {
            panic!()
        };
        let StmtKind::Assign(lhs, rhs) = &apply.stmts[0].kind else {
            panic!()
        };
        let ExprKind::Ref(x) = lhs.kind else { panic!() };
        assert_eq!(p.decl(x).name, "x");
        assert!(matches!(p.decl(x).kind, DeclKind::Var { .. }));
        assert_eq!(rhs.ty, Type::Bit(8));
        let ExprKind::Binary(_, a, b) = &rhs.kind else {
            panic!()
        };
        assert!(matches!(a.kind, ExprKind::Field(_, 0)));
        assert!(matches!(b.kind, ExprKind::Const(Value::Int(_))) && b.ty == Type::Bit(8));
    }

    #[test]
    fn generic_calls_infer_type_arguments_and_cast_literals() {
        let p = ok("extern void f<T>(in T a, in T b);
             control C(inout bit<8> y) { apply { f(y, 1); } }");
        let DeclKind::Control { apply, .. } = &p.decls.iter().find(|d| d.name == "C").unwrap().kind
        else {
            panic!()
        };
        let StmtKind::Call(e) = &apply.stmts[0].kind else {
            panic!()
        };
        let ExprKind::Call(c) = &e.kind else { panic!() };
        assert_eq!(c.type_args, vec![Type::Bit(8)]);
        let lit = c.args[1].as_ref().unwrap();
        assert_eq!(lit.ty, Type::Bit(8));
        assert!(matches!(&lit.kind, ExprKind::Const(v) if *v == int(1)));
    }

    fn decl<'a>(p: &'a Program, name: &str) -> &'a DeclKind {
        &p.decls
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .kind
    }

    #[test]
    fn table_entries_are_cast_to_key_types_and_actions_resolved() {
        let p = ok("match_kind { exact, ternary }
             header H { bit<8> a; bit<16> b; }
             control C(inout H h) {
                 action set(bit<8> v) { h.a = v; }
                 action nop() { }
                 table t {
                     key = { h.a: exact; h.b: ternary; }
                     actions = { set; nop; }
                     const default_action = nop();
                     const entries = { (1, 0x10 &&& 0xF0) : set(7); (2, _) : nop(); }
                     size = 64;
                 }
                 apply { t.apply(); }
             }");
        let DeclKind::Table(t) = decl(&p, "t") else {
            panic!()
        };
        assert_eq!(t.size, Some(64));
        assert!(t.default_action_const && t.entries_const);
        assert_eq!(p.decl(t.actions[0].action).name, "set");
        assert_eq!(t.entries.len(), 2);
        let e0 = &t.entries[0];
        assert_eq!(e0.keys[0].ty, Type::Set(Box::new(Type::Bit(8))));
        let ExprKind::Binary(ast::BinOp::Mask, v, m) = &e0.keys[1].kind else {
            panic!()
        };
        assert_eq!((v.ty.clone(), m.ty.clone()), (Type::Bit(16), Type::Bit(16)));
        assert!(matches!(&m.kind, ExprKind::Const(x) if *x == int(0xF0)));
        let arg = e0.action.args[0].as_ref().unwrap();
        assert_eq!(arg.ty, Type::Bit(8));
        assert!(matches!(t.entries[1].keys[1].kind, ExprKind::DontCare));
    }

    #[test]
    fn named_arguments_are_reordered_and_defaults_filled_in() {
        let p = ok(
            "extern void f(in bit<8> a, in bit<16> b = 5, @optional in bool c);
             control C(inout bit<8> y) { apply { f(b = 16w2, a = y); f(y); } }",
        );
        let DeclKind::Control { apply, .. } = decl(&p, "C") else {
            panic!()
        };
        let calls: Vec<&Call> = apply
            .stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Call(Expr {
                    kind: ExprKind::Call(c),
                    ..
                }) => &**c,
                k => panic!("{k:?}"),
            })
            .collect();
        assert!(matches!(
            calls[0].args[0].as_ref().unwrap().kind,
            ExprKind::Ref(_)
        ));
        assert!(
            matches!(&calls[0].args[1].as_ref().unwrap().kind, ExprKind::Const(v) if *v == int(2))
        );
        assert!(calls[0].args[2].is_none());
        assert!(
            matches!(&calls[1].args[1].as_ref().unwrap().kind, ExprKind::Const(v) if *v == int(5))
        );
    }

    #[test]
    fn the_main_package_infers_its_type_arguments() {
        let p = ok("struct S { bit<8> x; }
             control Ctl<T>(inout T t);
             package Pkg<T>(Ctl<T> c);
             control MyCtl(inout S s) { apply { s.x = 1; } }
             Pkg(MyCtl()) main;");
        let main = p.main.expect("main");
        let DeclKind::Instance {
            ty: Type::Package(_, targs),
            args,
            ..
        } = &p.decl(main).kind
        else {
            panic!()
        };
        assert!(matches!(targs.as_slice(), [Type::Struct(_)]));
        assert_eq!(p.show(&targs[0]), "S");
        assert!(
            matches!(&args[0].as_ref().unwrap().kind, ExprKind::Call(c) if matches!(c.target, CallTarget::Construct(Type::Control(..))))
        );
    }

    #[test]
    fn the_printed_ir_is_p4_that_checks_to_the_same_constants() {
        let src = "match_kind { exact, ternary }
             error { Oops }
             extern packet_in { void extract<T>(out T hdr); }
             extern void log<T>(in T data);
             enum bit<8> Proto { TCP = 6, UDP = 17 }
             enum Color { Red, Green }
             type bit<9> port_t;
             header H { bit<8> a; bit<16> b; Proto p; }
             struct S { H h; H[2] stack; }
             const bit<16> K = (bit<16>)8w3 << 4 | 16w1;
             bit<8> f(in bit<8> x, in bit<8> y = 2) { return x |+| y; }
             parser P(packet_in pkt, out S s) {
                 state start {
                     pkt.extract(s.h);
                     transition select(s.h.a, s.h.p) {
                         (1 .. 3, Proto.TCP): next;
                         (0x10 &&& 0xF0, _): accept;
                         default: reject;
                     }
                 }
                 state next { pkt.extract(s.stack.next); transition accept; }
             }
             control C(inout S s, in port_t port)(bit<8> init) {
                 Color c = Color.Green;
                 action set(bit<8> v) { s.h.a = v; s.h.b[7:0] = (v ++ 4w0)[11:4]; }
                 table t {
                     key = { s.h.a: exact; s.h.b: ternary @name(\"bee\"); }
                     actions = { set; }
                     default_action = set(init);
                     const entries = { (1, 0x0F &&& 0xFF) : set(2); }
                 }
                 apply {
                     if (s.h.isValid() && !t.apply().hit) { s.h.a = f(s.h.a); }
                     else if (c == Color.Red) { s.stack[1].setInvalid(); }
                     switch (s.h.a) { 1: 2: { log({ s.h.b, K }); } default: { } }
                     s.h.b = (bit<16>)(bit<9>)port + K;
                 }
             }";
        let first = ok(src);
        let printed = super::print::to_p4(&first);
        let second = ok(&printed);
        assert_eq!(constant(&second, "K"), constant(&first, "K"));
        assert_eq!(
            super::print::to_p4(&second),
            printed,
            "printing is not a fixed point"
        );
    }

    #[test]
    fn type_errors_give_no_program() {
        let (p, diags) = run("control C(inout bit<8> y) { apply { y = 16w1; } }");
        assert!(p.is_none());
        assert!(
            diags.contains("t.p4(1:41): error: type mismatch: the assigned value must have type bit<8>, not bit<16>"),
            "{diags}"
        );
    }

    #[test]
    fn typed_programs_have_no_unknown_types() {
        let p = ok("match_kind { exact }
             header H { bit<8> a; bit<16> b; }
             extern void f<T>(in T x);
             control C(inout H h) {
                 action set(bit<8> v) { h.a = v; }
                 table t { key = { h.a: exact; } actions = { set; } default_action = set(1); }
                 apply {
                     if (h.isValid() && t.apply().hit) { h.b = h.b + (h.a ++ 8w1); }
                     f({ h.a, h.b[3:0] });
                 }
             }");
        let mut n = 0;
        p.for_each_expr(&mut |e| {
            assert_ne!(e.ty, Type::Unknown, "{e:?}");
            n += 1;
        });
        assert!(n > 20, "{n}");
    }

    #[test]
    fn constant_errors_are_reported_not_panicked() {
        let (p, diags) =
            run("const bit<8> A = 8w1 / 0; const int B = 1 << 100000000; const int C = -7 % 2;");
        assert!(p.is_none());
        assert_eq!(diags.matches("error:").count(), 3, "{diags}");
    }
    /// p4c's P4Info for p4c's `match-on-exprs2-bmv2` names the key
    /// `hdr.ethernet.dstAddr & 0x010101010101` as `hdr.ethernet.dstAddr & 0x10101010101`: the
    /// expression as written, the constant in its source base; a field keeps its path and a
    /// `@name` wins.
    #[test]
    fn key_expressions_are_named_as_written() {
        let p = ok("match_kind { exact }
             header E { bit<48> dst; bit<16> t; }
             struct H { E e; }
             action a() {}
             control C(inout H h) {
                 table t {
                     key = {
                         h.e.dst & 0x010101010101 : exact;
                         h.e.t - 10 : exact @name(\"less_10\");
                         h.e.t : exact;
                         h.e.t ^ 0b101 : exact;
                     }
                     actions = { a; }
                 }
                 apply { t.apply(); }
             }");
        let t = p
            .decls
            .iter()
            .find_map(|d| match &d.kind {
                DeclKind::Table(t) => Some(t),
                _ => None,
            })
            .unwrap();
        let names: Vec<String> = t.key.iter().map(|k| k.control_plane_name(&p)).collect();
        assert_eq!(
            names,
            [
                "h.e.dst & 0x10101010101",
                "less_10",
                "h.e.t",
                "h.e.t ^ 0b101"
            ]
        );
    }
}

//! The compiled conditions and expressions (`switch_engine::compile`) against the expression
//! interpreter (`switch_engine::eval`), which the STF and conformance suites check against p4c:
//! every condition, checksum condition and action expression of every test program, random
//! expressions of every operator over those programs' fields, and random narrow expressions over
//! fields of random widths (1-64 bits, signed or not), on random header vectors (values,
//! validity) and random action data, must evaluate to the same value.

mod common;

use common::Rng;
use num_bigint::BigInt;
use switch_engine::compile::{self, Code, KeyCopy, Op};
use switch_engine::eval::{self, Ctx};
use switch_engine::exec::{self, Pkt};
use switch_engine::expr::FieldLoc;
use switch_engine::expr::{Arg, Ex, HRef, Op1, Op2, K};
use switch_engine::phv::Phv;
use switch_engine::program::{KeyPart, KeySrc, Next, Prim, Prog, Slot};
use switch_engine::state::{ActionData, EntryVal, Ext, Runtime, TableState};
use switch_engine::value::mask64;
use switch_tables::MAX_PACKED_KEY;

/// Small values and all-ones as often as arbitrary ones: comparisons against the programs'
/// constants and overflow edges are then taken too.
fn value(rng: &mut Rng, width: u32) -> u64 {
    let v = match rng.next() % 4 {
        0 | 1 => rng.next() % 4,
        2 => u64::MAX,
        _ => rng.next(),
    };
    v & mask64(width)
}

fn programs() -> Vec<(String, Prog)> {
    let dir = format!("{}/tests", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for sub in ["stf", "programs"] {
        let mut paths: Vec<_> = std::fs::read_dir(format!("{dir}/{sub}"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            let json = p4_bmv2_json::Program::from_json(&text).unwrap();
            let prog = switch_engine::load::load(&json).unwrap();
            out.push((p.display().to_string(), prog));
        }
    }
    out
}

fn randomize(rng: &mut Rng, prog: &Prog, phv: &mut Phv) {
    for f in &prog.fields {
        match f.slot {
            Slot::Narrow(s) => phv.set_n(s, value(rng, f.width)),
            Slot::Wide { off, len } | Slot::Varbit { off, len, .. } => {
                for b in &mut phv.wide[off as usize..(off + len) as usize] {
                    *b = rng.next() as u8;
                }
                let extra = len * 8 - f.width.min(len * 8);
                phv.wide[off as usize] &= 0xffu8 >> extra;
            }
        }
    }
    for v in &mut phv.valid {
        *v = rng.next() % 2 == 0;
    }
}

fn args(rng: &mut Rng, params: &[(String, u32)]) -> Vec<Arg> {
    params
        .iter()
        .map(|(_, w)| {
            if *w <= 64 {
                Arg::N(value(rng, *w))
            } else {
                Arg::W(BigInt::from(rng.next()) << 64 | BigInt::from(rng.next()))
            }
        })
        .collect()
}

/// What an expression reads: outside a parser, no packet bytes.
fn ctx<'a>(prog: &'a Prog, phv: &'a Phv, args: &'a [Arg]) -> Ctx<'a> {
    Ctx {
        prog,
        phv,
        args,
        data: &[],
        cursor: 0,
    }
}

/// Every expression an action's primitives evaluate through the compiled path.
fn action_exprs(prims: &[Prim]) -> Vec<&Ex> {
    let mut out = Vec::new();
    for p in prims {
        match p {
            Prim::Assign(_, e) | Prim::Count(_, e) | Prim::RegisterRead(_, _, e) => out.push(e),
            Prim::RegisterWrite(_, i, v) => out.extend([i, v]),
            Prim::JumpIfZero(c, _) => out.push(c),
            _ => {}
        }
    }
    out
}

/// How many fused store runs (`Op::Stores`) a list of steps holds: the tests assert that the
/// case they check occurred.
fn fused_runs(ops: &[Op]) -> usize {
    ops.iter()
        .filter(|op| matches!(op, Op::Stores { .. }))
        .count()
}

#[test]
fn compiled_expressions_agree_with_the_interpreter() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0usize;
    for (name, prog) in programs() {
        let code = Code::new(&prog);
        let mut phv = Phv::new(&prog);
        for round in 0..200 {
            randomize(&mut rng, &prog, &mut phv);
            let no_args: &[Arg] = &[];
            for (i, c) in prog.conds.iter().enumerate() {
                let c0 = ctx(&prog, &phv, no_args);
                assert_eq!(
                    compile::boolean(&prog, &c.expr)(&c0),
                    eval::eval_bool(&c0, &c.expr),
                    "{name}: condition {i}, round {round}: {:?}",
                    c.expr
                );
                checked += 1;
            }
            for (ck, cond) in prog.checksums.iter().zip(&code.checksum_conds) {
                if let (Some(e), Some(f)) = (&ck.cond, cond) {
                    let c0 = ctx(&prog, &phv, no_args);
                    assert_eq!(f(&c0), eval::eval_bool(&c0, e), "{name}: checksum {e:?}");
                    checked += 1;
                }
            }
            for a in &prog.actions {
                let data = args(&mut rng, &a.params);
                let c = ctx(&prog, &phv, &data);
                for e in action_exprs(&a.prims) {
                    assert_eq!(
                        compile::boolean(&prog, e)(&c),
                        eval::eval_bool(&c, e),
                        "{name}: action {} condition, round {round}: {e:?}",
                        a.name
                    );
                    if !e.wide {
                        assert_eq!(
                            compile::int(&prog, e)(&c),
                            eval::eval::<i128>(&c, e),
                            "{name}: action {}, round {round}: {e:?}",
                            a.name
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    // The programs hold a few hundred expressions; a vacuous pass would check none.
    assert!(checked > 10_000, "only {checked} evaluations compared");
}

const OPS2: [Op2; 21] = [
    Op2::Add,
    Op2::Sub,
    Op2::Mul,
    Op2::Div,
    Op2::Mod,
    Op2::Shl,
    Op2::Shr,
    Op2::Eq,
    Op2::Ne,
    Op2::Gt,
    Op2::Ge,
    Op2::Lt,
    Op2::Le,
    Op2::And,
    Op2::Or,
    Op2::BAnd,
    Op2::BOr,
    Op2::BXor,
    Op2::TwoCompMod,
    Op2::SatCast,
    Op2::UsatCast,
];
const OPS1: [Op1; 5] = [Op1::Not, Op1::BNot, Op1::Neg, Op1::D2b, Op1::B2d];

/// A random expression over `prog`'s fields, with the `wide` marks the loader gives
/// (`load/expressions.rs`).
fn gen(rng: &mut Rng, prog: &Prog, params: u32, depth: u32) -> Ex {
    let leaf = depth == 0 || rng.below(3) == 0;
    let n = |k| Ex { k, wide: false };
    if leaf {
        return match rng.below(5) {
            0 => n(K::Const(i128::from(value(rng, 64)))),
            1 if params > 0 => n(K::Param(rng.below(params as usize) as u32)),
            2 if !prog.headers.is_empty() => {
                n(K::Valid(HRef::Static(rng.below(prog.headers.len()) as u32)))
            }
            _ => {
                let f = rng.below(prog.fields.len());
                Ex {
                    k: K::Field(f as u32),
                    wide: prog.fields[f].width > 64,
                }
            }
        };
    }
    if rng.below(8) == 0 {
        let (c, a, b) = (
            gen(rng, prog, params, depth - 1),
            gen(rng, prog, params, depth - 1),
            gen(rng, prog, params, depth - 1),
        );
        let wide = a.wide || b.wide;
        return Ex {
            k: K::Cond(Box::new(c), Box::new(a), Box::new(b)),
            wide,
        };
    }
    if rng.below(4) == 0 {
        let op = OPS1[rng.below(OPS1.len())];
        let a = gen(rng, prog, params, depth - 1);
        let wide = matches!(op, Op1::BNot | Op1::Neg) && a.wide;
        return Ex {
            k: K::Un(op, Box::new(a)),
            wide,
        };
    }
    let op = OPS2[rng.below(OPS2.len())];
    if matches!(
        op,
        Op2::Eq | Op2::Ne | Op2::Gt | Op2::Ge | Op2::Lt | Op2::Le
    ) && rng.below(2) == 0
    {
        // A field against a small constant, as most pipeline conditions are, often equal.
        let f = rng.below(prog.fields.len());
        let a = Ex {
            k: K::Field(f as u32),
            wide: prog.fields[f].width > 64,
        };
        let b = n(K::Const(rng.below(4) as i128));
        return Ex {
            k: K::Bin(op, Box::new(a), Box::new(b)),
            wide: false,
        };
    }
    if matches!(
        op,
        Op2::Add | Op2::Sub | Op2::Mul | Op2::Div | Op2::Mod | Op2::BAnd | Op2::BOr | Op2::BXor
    ) && rng.below(3) == 0
    {
        // A field and a constant (`ttl - 1`, `x & 0xff`), compiled as one closure.
        let f = rng.below(prog.fields.len());
        let a = Ex {
            k: K::Field(f as u32),
            wide: prog.fields[f].width > 64,
        };
        let b = n(K::Const(i128::from(value(rng, 16))));
        let wide = a.wide;
        return Ex {
            k: K::Bin(op, Box::new(a), Box::new(b)),
            wide,
        };
    }
    let a = gen(rng, prog, params, depth - 1);
    // Shift amounts and cast widths small enough to matter.
    let b = match op {
        Op2::Shl | Op2::Shr | Op2::TwoCompMod | Op2::SatCast | Op2::UsatCast
            if rng.below(2) == 0 =>
        {
            n(K::Const(rng.below(70) as i128))
        }
        _ => gen(rng, prog, params, depth - 1),
    };
    let wide = match op {
        Op2::Eq | Op2::Ne | Op2::Gt | Op2::Ge | Op2::Lt | Op2::Le | Op2::And | Op2::Or => false,
        Op2::Shl | Op2::Shr | Op2::TwoCompMod | Op2::SatCast | Op2::UsatCast => a.wide,
        _ => a.wide || b.wide,
    };
    Ex {
        k: K::Bin(op, Box::new(a), Box::new(b)),
        wide,
    }
}

#[test]
fn random_expressions_compile_to_what_the_interpreter_computes() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (name, prog) in programs() {
        let mut phv = Phv::new(&prog);
        let params = [(String::new(), 8), (String::new(), 48), (String::new(), 96)];
        for _ in 0..1000 {
            let e = gen(&mut rng, &prog, params.len() as u32, 4);
            let (b, i) = (compile::boolean(&prog, &e), compile::int(&prog, &e));
            for _ in 0..4 {
                randomize(&mut rng, &prog, &mut phv);
                let data = args(&mut rng, &params);
                let c = ctx(&prog, &phv, &data);
                assert_eq!(b(&c), eval::eval_bool(&c, &e), "{name}: {e:?}");
                if !e.wide {
                    assert_eq!(i(&c), eval::eval::<i128>(&c, &e), "{name}: {e:?}");
                }
            }
        }
    }
}

/// noop.json with a metadata header of `n` fields of random widths (1-64 bits), each signed
/// (from 2 bits) or not; their field indices.
fn random_width_program(rng: &mut Rng, n: usize) -> (Prog, Vec<u32>) {
    let path = format!("{}/tests/programs/noop.json", env!("CARGO_MANIFEST_DIR"));
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let fields: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let width = 1 + rng.below(64);
            // bmv2 refuses a signed field of one bit.
            let signed = width > 1 && rng.below(2) == 0;
            serde_json::json!([format!("f{i}"), width, signed])
        })
        .collect();
    let types = json["header_types"].as_array_mut().unwrap();
    let id = types.len();
    types.push(serde_json::json!({"name": "rnd_t", "id": id, "fields": fields}));
    let headers = json["headers"].as_array_mut().unwrap();
    let h = headers.len();
    headers.push(
        serde_json::json!({"name": "rnd", "id": h, "header_type": "rnd_t",
        "metadata": true}),
    );
    let jp = p4_bmv2_json::Program::from_json(&json.to_string()).unwrap();
    let prog = switch_engine::load::load(&jp).unwrap();
    let first = prog.headers[h].first_field;
    (prog, (first..first + n as u32).collect())
}

/// A constant as the programs hold them: small, a field's all-ones, negative, or past 64 bits.
fn constant(rng: &mut Rng) -> i128 {
    match rng.below(5) {
        0 | 1 => rng.below(4) as i128,
        2 => {
            let width = 1 + rng.below(64) as u32;
            i128::from(value(rng, width))
        }
        3 => -(rng.below(4) as i128) - 1,
        _ => (i128::from(rng.next()) << 64) | i128::from(rng.next()),
    }
}

const RELS: [Op2; 6] = [Op2::Eq, Op2::Ne, Op2::Gt, Op2::Ge, Op2::Lt, Op2::Le];
const ARITH: [Op2; 13] = [
    Op2::Add,
    Op2::Sub,
    Op2::Mul,
    Op2::Div,
    Op2::Mod,
    Op2::BAnd,
    Op2::BOr,
    Op2::BXor,
    Op2::Shl,
    Op2::Shr,
    Op2::TwoCompMod,
    Op2::SatCast,
    Op2::UsatCast,
];

fn bin(op: Op2, a: Ex, b: Ex) -> Ex {
    Ex {
        k: K::Bin(op, Box::new(a), Box::new(b)),
        wide: false,
    }
}

fn narrow(k: K) -> Ex {
    Ex { k, wide: false }
}

/// A narrow expression: fields and constants under
/// arithmetic (widths and shift amounts small enough to matter), slices (`(f >> k) & m`),
/// casts, negation, conditions as values and `?:`.
fn narrow_int(rng: &mut Rng, fields: &[u32], depth: u32) -> Ex {
    let field = |rng: &mut Rng| narrow(K::Field(fields[rng.below(fields.len())]));
    if depth == 0 || rng.below(3) == 0 {
        return match rng.below(3) {
            0 => narrow(K::Const(constant(rng))),
            _ => field(rng),
        };
    }
    match rng.below(8) {
        0 => narrow(K::Cond(
            Box::new(narrow_bool(rng, fields, depth - 1)),
            Box::new(narrow_int(rng, fields, depth - 1)),
            Box::new(narrow_int(rng, fields, depth - 1)),
        )),
        1 => {
            let op = [Op1::BNot, Op1::Neg, Op1::B2d][rng.below(3)];
            let a = match op {
                Op1::B2d => narrow_bool(rng, fields, depth - 1),
                _ => narrow_int(rng, fields, depth - 1),
            };
            narrow(K::Un(op, Box::new(a)))
        }
        2 => {
            let shifted = bin(
                Op2::Shr,
                field(rng),
                narrow(K::Const(rng.below(64) as i128)),
            );
            let mask = i128::from(mask64(1 + rng.below(64) as u32));
            bin(Op2::BAnd, shifted, narrow(K::Const(mask)))
        }
        _ => {
            let op = ARITH[rng.below(ARITH.len())];
            let a = narrow_int(rng, fields, depth - 1);
            let b = match op {
                Op2::Shl | Op2::Shr | Op2::TwoCompMod | Op2::SatCast | Op2::UsatCast
                    if rng.below(2) == 0 =>
                {
                    narrow(K::Const(rng.below(70) as i128))
                }
                _ => narrow_int(rng, fields, depth - 1),
            };
            bin(op, a, b)
        }
    }
}

/// A narrow condition: a field against a constant or a
/// field, a fixed header's validity, `!`, `&&`, `||`, a value's truth, comparisons of
/// expressions and `?:`.
fn narrow_bool(rng: &mut Rng, fields: &[u32], depth: u32) -> Ex {
    let field = |rng: &mut Rng| narrow(K::Field(fields[rng.below(fields.len())]));
    let rel = RELS[rng.below(RELS.len())];
    if depth == 0 || rng.below(3) == 0 {
        return match rng.below(3) {
            0 => {
                let k = narrow(K::Const(constant(rng)));
                bin(rel, field(rng), k)
            }
            1 => bin(rel, field(rng), field(rng)),
            _ => narrow(K::Valid(HRef::Static(rng.below(3) as u32))),
        };
    }
    match rng.below(6) {
        0 => narrow(K::Un(
            Op1::Not,
            Box::new(narrow_bool(rng, fields, depth - 1)),
        )),
        1 => {
            let op = [Op2::And, Op2::Or][rng.below(2)];
            let a = narrow_bool(rng, fields, depth - 1);
            bin(op, a, narrow_bool(rng, fields, depth - 1))
        }
        2 => narrow(K::Un(
            Op1::D2b,
            Box::new(narrow_int(rng, fields, depth - 1)),
        )),
        3 => narrow(K::Cond(
            Box::new(narrow_bool(rng, fields, depth - 1)),
            Box::new(narrow_bool(rng, fields, depth - 1)),
            Box::new(narrow_bool(rng, fields, depth - 1)),
        )),
        _ => {
            let a = narrow_int(rng, fields, depth - 1);
            bin(rel, a, narrow_int(rng, fields, depth - 1))
        }
    }
}

/// The compiled closures compute what the interpreter computes for the shapes they read in
/// one closure (a field against a constant, a field with a constant operand) and the rest,
/// over fields of random widths and signedness, with random constants.
#[test]
fn narrow_shapes_compile_to_what_the_interpreter_computes() {
    let mut rng = Rng(0xa54f_f53a_5f1d_36f1);
    let (mut signed, mut checked) = (0usize, 0usize);
    for _ in 0..40 {
        let (prog, fields) = random_width_program(&mut rng, 12);
        signed += fields
            .iter()
            .filter(|&&f| prog.fields[f as usize].signed)
            .count();
        let mut phv = Phv::new(&prog);
        for _ in 0..300 {
            let depth = rng.below(4) as u32;
            let (c, e) = (
                narrow_bool(&mut rng, &fields, depth),
                narrow_int(&mut rng, &fields, depth),
            );
            let (b, i) = (compile::boolean(&prog, &c), compile::int(&prog, &e));
            for _ in 0..8 {
                randomize(&mut rng, &prog, &mut phv);
                let c0 = ctx(&prog, &phv, &[]);
                assert_eq!(b(&c0), eval::eval_bool(&c0, &c), "{c:?}");
                assert_eq!(i(&c0), eval::eval::<i128>(&c0, &e), "{e:?}");
                checked += 1;
            }
        }
    }
    assert!(
        signed > 100 && checked == 40 * 300 * 8,
        "{signed} signed fields, {checked} evaluations"
    );
}

/// An action's primitives one by one, by the interpreter's rules: an assignment evaluates its
/// expression (`eval`) and stores it cut to the field's width, a jump moves to its primitive,
/// an exit ends the action (true) and the pipeline. Only the primitives `interpretable` admits.
fn interpret(prog: &Prog, phv: &mut Phv, prims: &[Prim], args: &[Arg]) -> bool {
    let mut pc = 0;
    while let Some(p) = prims.get(pc) {
        pc += 1;
        let c = ctx(prog, phv, args);
        match p {
            Prim::Assign(FieldLoc::Static(f), e) => {
                if matches!(prog.fields[*f as usize].slot, Slot::Narrow(_)) && !e.wide {
                    let v = eval::eval::<i128>(&c, e);
                    phv.set_i128(prog, *f, v);
                } else {
                    let v = eval::eval::<BigInt>(&c, e);
                    phv.set_big(prog, *f, &v);
                }
            }
            Prim::Jump(t) => pc = *t,
            Prim::JumpIfZero(k, t) => {
                if !eval::eval_bool(&c, k) {
                    pc = *t;
                }
            }
            Prim::Exit => return true,
            _ => unreachable!("interpretable admits only assignments, jumps and exits"),
        }
    }
    false
}

/// Assignments to fixed fields, forward jumps and exits: what `interpret` runs (a backward
/// jump could loop, and the engine cuts loops where the reference would not).
fn interpretable(prims: &[Prim]) -> bool {
    prims.iter().enumerate().all(|(i, p)| match p {
        Prim::Assign(FieldLoc::Static(_), _) | Prim::Exit => true,
        Prim::Jump(t) | Prim::JumpIfZero(_, t) => *t > i,
        _ => false,
    })
}

/// Runs action `a` compiled (`exec::run_action`: fused stores, renumbered jumps) and
/// interpreted on the same header vector and data; both must leave the same vector.
fn compare_action(prog: &Prog, code: &Code, phv: &Phv, a: usize, data: &[Arg]) {
    let mut pkt = switch_engine::exec::Pkt::new(prog);
    pkt.phv = phv.clone();
    let mut ext = switch_engine::state::Ext::new(prog);
    switch_engine::exec::run_action(prog, code, &mut ext, &mut pkt, a as u32, data);
    let mut want = phv.clone();
    interpret(prog, &mut want, &prog.actions[a].prims, data);
    let name = &prog.actions[a].name;
    let prims = &prog.actions[a].prims;
    assert_eq!(pkt.phv.narrow, want.narrow, "{name}: {prims:?} {data:?}");
    assert_eq!(pkt.phv.wide, want.wide, "{name}: {prims:?} {data:?}");
    assert_eq!(pkt.phv.src, want.src, "{name}: written headers, {prims:?}");
}

/// Every action of the test programs made of assignments and jumps, compiled, leaves the
/// header vector its primitives leave one by one.
#[test]
fn compiled_actions_store_what_their_primitives_store() {
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    let (mut actions, mut fused) = (0usize, 0usize);
    for (_, prog) in programs() {
        let code = Code::new(&prog);
        let mut phv = Phv::new(&prog);
        for (a, info) in prog.actions.iter().enumerate() {
            if !interpretable(&info.prims) {
                continue;
            }
            actions += 1;
            fused += fused_runs(&code.actions[a].ops);
            for _ in 0..20 {
                randomize(&mut rng, &prog, &mut phv);
                let data = args(&mut rng, &info.params);
                compare_action(&prog, &code, &phv, a, &data);
            }
        }
    }
    assert!(
        actions >= 20 && fused >= 4,
        "{actions} actions compared, {fused} fused runs among them"
    );
}

/// A random action over a few fields (so that stores meet the slots earlier ones wrote, and
/// copies read them): assignments of constants, fields, parameters (one of them wider than
/// 64 bits, which a narrow store takes through the interpreter) and expressions, with forward
/// jumps landing anywhere, including inside what would be a run of stores.
fn random_action(rng: &mut Rng, prog: &Prog, fields: &[u32], params: u32) -> Vec<Prim> {
    let n = 1 + rng.below(12);
    let field = |rng: &mut Rng| {
        let f = fields[rng.below(fields.len())];
        Ex {
            k: K::Field(f),
            wide: prog.fields[f as usize].width > 64,
        }
    };
    (0..n)
        .map(|i| {
            let dst = fields[rng.below(fields.len())];
            let src = match rng.below(8) {
                0 | 1 => Ex {
                    k: K::Const(i128::from(value(rng, 64))),
                    wide: false,
                },
                2 | 3 => field(rng),
                4 | 5 if params > 0 => {
                    let p = rng.below(params as usize) as u32;
                    Ex {
                        k: K::Param(p),
                        wide: p == params - 1,
                    }
                }
                _ => gen(rng, prog, params.saturating_sub(1), 2),
            };
            match rng.below(10) {
                0 => Prim::Jump(i + 1 + rng.below(n - i)),
                1 => Prim::JumpIfZero(field(rng), i + 1 + rng.below(n - i)),
                _ => Prim::Assign(FieldLoc::Static(dst), src),
            }
        })
        .collect()
}

/// Random actions (`random_action`), compiled, leave the header vector their primitives leave
/// one by one: whatever runs of stores `compile::fuse` makes of them and wherever their jumps
/// land.
#[test]
fn random_actions_fuse_to_what_their_primitives_store() {
    use switch_engine::program::ActionInfo;
    let mut rng = Rng(0x1f83_d9ab_fb41_bd6b);
    let params = vec![(String::new(), 8), (String::new(), 48), (String::new(), 96)];
    let mut fused = 0usize;
    for (name, mut prog) in programs() {
        let narrow: Vec<u32> = (0..prog.fields.len() as u32)
            .filter(|&f| matches!(prog.fields[f as usize].slot, Slot::Narrow(_)))
            .collect();
        if narrow.len() < 4 {
            continue;
        }
        let first = prog.actions.len();
        for k in 0..200 {
            let fields: Vec<u32> = (0..2 + rng.below(4))
                .map(|_| narrow[rng.below(narrow.len())])
                .collect();
            let prims = random_action(&mut rng, &prog, &fields, params.len() as u32);
            prog.actions.push(ActionInfo {
                name: format!("{name}: random {k}"),
                json_id: -1,
                params: params.clone(),
                prims,
            });
        }
        let code = Code::new(&prog);
        let mut phv = Phv::new(&prog);
        for a in first..prog.actions.len() {
            fused += fused_runs(&code.actions[a].ops);
            for _ in 0..5 {
                randomize(&mut rng, &prog, &mut phv);
                let data = args(&mut rng, &params);
                compare_action(&prog, &code, &phv, a, &data);
            }
        }
    }
    assert!(fused > 1000, "only {fused} fused runs");
}

/// Appends to `prog` a random control graph over `fields` as a new pipeline: conditionals,
/// calls of random actions without parameters (stores, forward jumps, now and then an exit)
/// and keyless tables whose default entry runs such an action, going to their action's next
/// node or to their miss node. Each node goes only to nodes made after it (a control graph
/// has no cycles), mostly the next one: chains of calls, nodes several others go to, tables'
/// successors inside a chain.
fn random_pipeline(rng: &mut Rng, prog: &mut Prog, fields: &[u32], tables: &mut Vec<TableState>) {
    use switch_engine::program::{ActionInfo, CallInfo, CondInfo, PipelineInfo, TableInfo};
    let n = 2 + rng.below(14);
    let (mut t, mut c, mut a) = (prog.tables.len(), prog.conds.len(), prog.calls.len());
    let nodes: Vec<Next> = (0..n)
        .map(|_| match rng.below(8) {
            0 | 1 => (Next::Cond(c as u32), c += 1).0,
            2 | 3 => (Next::Table(t as u32), t += 1).0,
            _ => (Next::Call(a as u32), a += 1).0,
        })
        .collect();
    let later = |rng: &mut Rng, i: usize| {
        match rng.below(2) {
            0 => nodes.get(i + 1 + rng.below(n - i)).copied(),
            _ => nodes.get(i + 1).copied(),
        }
        .unwrap_or(Next::End)
    };
    let action = |rng: &mut Rng, prog: &mut Prog| {
        let mut prims = random_action(rng, prog, fields, 0);
        if rng.below(6) == 0 {
            prims.push(Prim::Exit);
        }
        prog.actions.push(ActionInfo {
            name: format!("random {}", prog.actions.len()),
            json_id: -1,
            params: Vec::new(),
            prims,
        });
        prog.actions.len() as u32 - 1
    };
    for (i, node) in nodes.iter().enumerate() {
        match node {
            Next::Cond(_) => {
                let (t, f) = (later(rng, i), later(rng, i));
                let expr = gen(rng, prog, 0, 2);
                prog.conds.push(CondInfo { expr, t, f });
            }
            Next::Table(_) => {
                let act = action(rng, prog);
                let (next, miss) = (later(rng, i), later(rng, i));
                prog.tables.push(TableInfo {
                    name: format!("random {t}"),
                    keys: Vec::new(),
                    profile: None,
                    max_size: 0,
                    actions: vec![act],
                    next_by_action: vec![(act, next)],
                    hit_miss: (rng.below(3) == 0).then_some((next, miss)),
                    base_default_next: miss,
                    default_action_const: true,
                    default_entry_const: true,
                    immutable_entries: false,
                    direct_counter: None,
                    direct_meter: None,
                    support_timeout: false,
                });
                tables.push(TableState {
                    table: None,
                    default: Some(EntryVal::Act(ActionData {
                        action: act,
                        args: Box::new([]),
                    })),
                });
            }
            _ => {
                let act = action(rng, prog);
                let next = later(rng, i);
                prog.calls.push(CallInfo { action: act, next });
            }
        }
    }
    prog.pipelines.push(PipelineInfo {
        name: String::new(),
        init: nodes[0],
    });
}

/// A control graph walked node by node with the interpreter: a conditional by `eval_bool`, an
/// action call by `interpret`, a keyless table by its default action, then its miss node
/// (`__MISS__`) or its action's next node, as bmv2 goes on after a miss. True when an action
/// exited.
fn walk(prog: &Prog, tables: &[TableState], phv: &mut Phv, init: Next) -> bool {
    let mut n = init;
    loop {
        let (action, next) = match n {
            Next::End => return false,
            Next::Cond(c) => {
                let ci = &prog.conds[c as usize];
                n = match eval::eval_bool(&ctx(prog, phv, &[]), &ci.expr) {
                    true => ci.t,
                    false => ci.f,
                };
                continue;
            }
            Next::Call(c) => (prog.calls[c as usize].action, prog.calls[c as usize].next),
            Next::Table(t) => {
                let Some(EntryVal::Act(d)) = &tables[t as usize].default else {
                    unreachable!("random tables have a default action")
                };
                let ti = &prog.tables[t as usize];
                let next = ti.hit_miss.map_or(ti.next_of(d.action), |(_, miss)| miss);
                (d.action, next)
            }
        };
        if interpret(prog, phv, &prog.actions[action as usize].prims, &[]) {
            return true;
        }
        n = next;
    }
}

/// Random pipelines (`random_pipeline`), compiled into one list of steps each (calls inlined,
/// their stores fused across nodes), leave the header vector a walk node by node leaves.
#[test]
fn random_pipelines_run_what_their_nodes_run() {
    let mut rng = Rng(0x3c6e_f372_fe94_f82b);
    let (mut pipelines, mut fused, mut exits) = (0usize, 0usize, 0usize);
    for (name, mut prog) in programs() {
        let narrow: Vec<u32> = (0..prog.fields.len() as u32)
            .filter(|&f| matches!(prog.fields[f as usize].slot, Slot::Narrow(_)))
            .collect();
        if narrow.len() < 4 {
            continue;
        }
        let mut tables: Vec<TableState> = (0..prog.tables.len())
            .map(|_| TableState {
                table: None,
                default: None,
            })
            .collect();
        let first = prog.pipelines.len();
        for _ in 0..300 {
            let fields: Vec<u32> = (0..2 + rng.below(4))
                .map(|_| narrow[rng.below(narrow.len())])
                .collect();
            random_pipeline(&mut rng, &mut prog, &fields, &mut tables);
        }
        let code = Code::new(&prog);
        let mut rt = Runtime {
            tables,
            profiles: Vec::new(),
            vsets: Vec::new(),
            ext: Ext::new(&prog),
        };
        let mut phv = Phv::new(&prog);
        for p in first..prog.pipelines.len() {
            pipelines += 1;
            fused += fused_runs(&code.pipelines[p].ops);
            for _ in 0..5 {
                randomize(&mut rng, &prog, &mut phv);
                let mut pkt = Pkt::new(&prog);
                pkt.phv = phv.clone();
                exec::apply_pipeline(&prog, &code, &mut rt, &mut pkt, p);
                let mut want = phv.clone();
                exits += usize::from(walk(&prog, &rt.tables, &mut want, prog.pipelines[p].init));
                assert!(
                    !pkt.regs.exit,
                    "an exit ends the pipeline, not the next one"
                );
                assert_eq!(pkt.phv.narrow, want.narrow, "{name}: pipeline {p}");
                assert_eq!(
                    pkt.phv.src, want.src,
                    "{name}: pipeline {p}, written headers"
                );
            }
        }
    }
    assert!(
        pipelines >= 500 && fused >= 500 && exits >= 100,
        "{pipelines} pipelines compared, {fused} fused runs among them, {exits} exits"
    );
}

/// A parser state's compiled select key holds, part by part, the value the interpreter
/// evaluates, masked to the part's width, in the part's bytes (big-endian).
#[test]
fn compiled_select_keys_hold_the_interpreted_values() {
    let mut rng = Rng(0xbb67_ae85_84ca_a73b);
    let (mut states, mut checked) = (0usize, 0usize);
    for (name, prog) in programs() {
        let code = Code::new(&prog);
        let mut phv = Phv::new(&prog);
        for (p, layouts) in prog.parsers.iter().zip(&code.parser_keys) {
            for (st, layout) in p.states.iter().zip(layouts) {
                let Some(layout) = layout.as_ref().filter(|_| !st.key.is_empty()) else {
                    continue;
                };
                assert_eq!(layout.copies.len(), st.key.len(), "{name}: {}", p.name);
                states += 1;
                for _ in 0..200 {
                    randomize(&mut rng, &prog, &mut phv);
                    let c = ctx(&prog, &phv, &[]);
                    for (copy, KeyPart::Value(e, w)) in layout.copies.iter().zip(&st.key) {
                        let KeyCopy::Narrow {
                            slot, bytes, mask, ..
                        } = *copy
                        else {
                            panic!("{name}: a select key copies a validity bit");
                        };
                        assert_eq!(bytes, w.div_ceil(8), "{name}: {e:?}");
                        let want = eval::eval::<i128>(&c, e) as u64 & mask64(*w);
                        assert_eq!(phv.n(slot) & mask, want, "{name}: {e:?}");
                        checked += 1;
                    }
                }
            }
        }
    }
    // Every program selects on ether_type or a protocol field somewhere.
    assert!(
        states >= 3 && checked >= 200 * states,
        "{states} compiled select keys, {checked} values compared"
    );
}

/// A table's compiled key holds what the general key builder puts there (each element's
/// `Phv::field_bytes` or validity byte, masked), as bytes and, for keys short enough to probe
/// as a number, as that number: every table of every test program whose key compiles, on
/// random header vectors. tests/programs/keys.p4 gives IPv6 keys (wide fields, alone and
/// behind an exact field) and a validity key.
#[test]
fn compiled_table_keys_hold_the_general_builders_bytes() {
    let mut rng = Rng(0x510e_527f_ade6_82d1);
    let (mut tables, mut packed, mut wide, mut valid) = (0usize, 0usize, 0usize, 0usize);
    for (name, prog) in programs() {
        let code = Code::new(&prog);
        let mut phv = Phv::new(&prog);
        for (t, layout) in prog.tables.iter().zip(&code.keys) {
            let Some(layout) = layout.as_ref().filter(|_| !t.keys.is_empty()) else {
                continue;
            };
            tables += 1;
            for c in &layout.copies {
                wide += usize::from(matches!(c, KeyCopy::Wide { .. }));
                valid += usize::from(matches!(c, KeyCopy::Valid { .. }));
            }
            let (mut want, mut got) = (Vec::new(), Vec::new());
            for _ in 0..200 {
                randomize(&mut rng, &prog, &mut phv);
                want.clear();
                for k in &t.keys {
                    let start = want.len();
                    match &k.src {
                        KeySrc::Field(FieldLoc::Static(f)) => phv.field_bytes(&prog, *f, &mut want),
                        KeySrc::Valid(HRef::Static(h)) => {
                            want.push(u8::from(phv.valid[*h as usize]))
                        }
                        src => panic!("{name}: {}: {src:?} has a compiled layout", t.name),
                    }
                    for (b, m) in want[start..].iter_mut().zip(k.mask.iter().flatten()) {
                        *b &= m;
                    }
                }
                exec::fill_key(layout, &phv, &mut got);
                assert_eq!(got, want, "{name}: {}", t.name);
                if layout.len <= MAX_PACKED_KEY {
                    let number = want.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b));
                    assert_eq!(exec::packed_key(layout, &phv), number, "{name}: {}", t.name);
                    packed += 1;
                }
            }
        }
    }
    assert!(
        tables >= 10 && packed >= 200 * 10 && wide >= 3 && valid >= 1,
        "{tables} tables, {packed} packed keys, {wide} wide and {valid} validity elements"
    );
}

/// A store to a narrow field leaves every other field as it was, and each reads back what
/// was stored into it, cut to its width.
#[test]
fn narrow_slots_keep_their_neighbours() {
    let mut rng = Rng(0x3c6e_f372_fe94_f82b);
    let mut checked = 0usize;
    for (name, prog) in programs() {
        let slots: Vec<(u32, switch_engine::program::NSlot)> = prog
            .fields
            .iter()
            .filter_map(|f| match f.slot {
                Slot::Narrow(s) => Some((f.width, s)),
                _ => None,
            })
            .collect();
        let mut phv = Phv::new(&prog);
        let mut want = vec![0u64; slots.len()];
        for _ in 0..20 * slots.len() {
            let i = (rng.next() % slots.len() as u64) as usize;
            let v = rng.next();
            phv.set_n(slots[i].1, v);
            want[i] = v & mask64(slots[i].0);
        }
        for (i, (_, s)) in slots.iter().enumerate() {
            assert_eq!(phv.n(*s), want[i], "{name}: slot {s:?}");
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} slots read back");
}

/// The input packets of an STF test (`packet PORT HEX`), for the parser to take apart.
fn stf_packets(stf: &str) -> Vec<Vec<u8>> {
    let Ok(text) = std::fs::read_to_string(stf) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("packet "))
        .filter_map(|rest| {
            let hex: String = rest.split_whitespace().skip(1).collect();
            (0..hex.len() / 2 * 2)
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                .collect()
        })
        .collect()
}

/// Tables without entries: what a parser run needs.
fn empty_runtime(prog: &Prog) -> switch_engine::state::Runtime {
    use switch_engine::state::{Ext, Runtime, TableState};
    Runtime {
        tables: prog
            .tables
            .iter()
            .map(|_| TableState {
                table: None,
                default: None,
            })
            .collect(),
        profiles: Vec::new(),
        vsets: vec![Vec::new(); prog.vsets.len()],
        ext: Ext::new(prog),
    }
}

/// `Phv::reset` zeroes only the headers the packet touched. One packet buffer reused, as the
/// switch's pool does, for the STF packets of every program, bit-flipped, parsed, then given
/// random stores (a field of more than 64 bits from a `u64` checked against the same store
/// through a BigInt), header zeroing and validity changes: after each reset the header vector
/// is, slot for slot, a new one.
#[test]
fn reset_header_vectors_are_new_ones() {
    use switch_engine::exec::{self, Pkt};
    let mut rng = Rng(0x9b05_688c_2b3e_6c1f);
    let mut resets = 0usize;
    for (name, prog) in programs() {
        let code = Code::new(&prog);
        let mut rt = empty_runtime(&prog);
        let new = Phv::new(&prog);
        let mut pkt = Pkt::new(&prog);
        let packets = stf_packets(&name.replace(".json", ".stf"));
        for p in packets.iter().cycle().take(packets.len() * 20) {
            pkt.data.clone_from(p);
            pkt.cursor = 0;
            if rng.below(2) == 0 && !pkt.data.is_empty() {
                let i = rng.below(pkt.data.len());
                pkt.data[i] ^= 1 << rng.below(8);
            }
            let _ = exec::parse(&prog, &code, &mut rt, &mut pkt, 0);
            for _ in 0..rng.below(4) {
                let h = rng.below(prog.headers.len()) as u32;
                let info = &prog.headers[h as usize];
                match rng.below(3) {
                    0 if info.nfields > 0 => {
                        let f = info.first_field + rng.below(info.nfields as usize) as u32;
                        let v = value(&mut rng, prog.fields[f as usize].width.min(64));
                        let mut via_big = pkt.phv.clone();
                        via_big.set_big(&prog, f, &BigInt::from(v));
                        pkt.phv.set_u64(&prog, f, v);
                        assert_eq!(pkt.phv.wide, via_big.wide, "{name}: field {f} = {v}");
                        assert_eq!(pkt.phv.narrow, via_big.narrow, "{name}: field {f} = {v}");
                    }
                    1 => {
                        pkt.phv.zero_header(&prog, h);
                        pkt.phv.valid[h as usize] = true;
                    }
                    _ => pkt.phv.valid[h as usize] = false,
                }
            }
            pkt.phv.reset(&prog);
            let phv = &pkt.phv;
            assert_eq!(phv.narrow, new.narrow, "{name}: {p:02x?}");
            assert_eq!(phv.wide, new.wide, "{name}: {p:02x?}");
            assert_eq!(phv.vl_bits, new.vl_bits, "{name}: {p:02x?}");
            assert_eq!(phv.valid, new.valid, "{name}: {p:02x?}");
            assert_eq!(phv.stack_next, new.stack_next, "{name}: {p:02x?}");
            assert_eq!(phv.ustack_next, new.ustack_next, "{name}: {p:02x?}");
            resets += 1;
        }
    }
    assert!(resets > 1000, "{resets} resets");
}

/// What a pipeline may do to the headers between the parser and the deparser: up to three
/// random field stores, `setValid`s (which zero a header) and `setInvalid`s.
fn change_headers(rng: &mut Rng, prog: &Prog, headers: &[u32], phv: &mut Phv) {
    for _ in 0..rng.below(4) {
        let h = headers[rng.below(headers.len())];
        let info = &prog.headers[h as usize];
        match rng.below(3) {
            0 if info.nfields > 0 => {
                let f = info.first_field + rng.below(info.nfields as usize) as u32;
                let v = value(rng, prog.fields[f as usize].width);
                phv.set_u64(prog, f, v);
            }
            1 => {
                phv.zero_header(prog, h);
                phv.valid[h as usize] = true;
            }
            _ => phv.valid[h as usize] = false,
        }
    }
}

/// The deparser leaves a header no store changed as the bytes it was parsed from
/// (`Phv::src`). For the STF packets of every program, bit-flipped, with random field stores,
/// header zeroing (a `setValid`) and validity changes after parsing, it emits exactly what
/// writing every valid header field by field emits.
#[test]
fn unwritten_headers_deparse_as_written_ones() {
    use switch_engine::exec::{self, Pkt};
    let mut rng = Rng(0x510e_527f_ade6_82d1);
    let (mut kept, mut rewritten) = (0usize, 0usize);
    for (name, prog) in programs() {
        let code = Code::new(&prog);
        let mut rt = empty_runtime(&prog);
        let packets = stf_packets(&name.replace(".json", ".stf"));
        let headers: Vec<u32> = (0..prog.headers.len() as u32)
            .filter(|&h| !prog.headers[h as usize].metadata)
            .collect();
        for p in packets.iter().cycle().take(packets.len() * 50) {
            let mut pkt = Pkt::new(&prog);
            pkt.data = p.clone();
            if rng.below(2) == 0 && !pkt.data.is_empty() {
                let i = rng.below(pkt.data.len());
                pkt.data[i] ^= 1 << rng.below(8);
            }
            let _ = exec::parse(&prog, &code, &mut rt, &mut pkt, 0);
            change_headers(&mut rng, &prog, &headers, &mut pkt.phv);
            kept += headers
                .iter()
                .filter(|&&h| pkt.phv.valid[h as usize] && pkt.phv.parsed_at(h).is_some())
                .count();
            let mut full = pkt.clone();
            full.phv.src.fill(0);
            exec::deparse(&prog, &mut pkt, 0);
            exec::deparse(&prog, &mut full, 0);
            assert_eq!(pkt.data, full.data, "{name}: {p:02x?}");
            rewritten += 1;
        }
    }
    assert!(
        rewritten > 1000 && kept > 1000,
        "{rewritten} packets, {kept} headers left as parsed"
    );
}

/// `gzip -dc`: p4c's corpus keeps the real compiler's JSON compressed.
fn gunzip(path: &str) -> String {
    let out = std::process::Command::new("gzip")
        .args(["-dc", path])
        .output()
        .unwrap();
    assert!(out.status.success(), "gzip -dc {path}");
    String::from_utf8(out.stdout).unwrap()
}

/// The paths of a directory's files whose names end in `ext`, sorted.
fn files(dir: &str, ext: &str) -> Vec<String> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(ext))
        .collect();
    out.sort();
    out
}

/// Programs with packets for their parsers: the STF programs here; the real p4c's JSON of
/// p4c's STF programs (`tests/p4c-corpus`, those it compiles), with their STF packets; and
/// the real p4c's JSON of lossless.p4, with `p4src/tests`' packets. As (name, JSON, packets).
fn programs_with_packets() -> Vec<(String, String, Vec<Vec<u8>>)> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let mut out = Vec::new();
    for p in files(&format!("{dir}/tests/stf"), ".json") {
        let packets = stf_packets(&p.replace(".json", ".stf"));
        out.push((p.clone(), std::fs::read_to_string(&p).unwrap(), packets));
    }
    let corpus = format!("{dir}/../../tests/p4c-corpus");
    let list = std::fs::read_to_string(format!("{corpus}/stf-programs.txt")).unwrap();
    for name in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let gz = format!("{corpus}/real-p4c/{name}.json.gz");
        if std::path::Path::new(&gz).exists() {
            let packets = stf_packets(&format!("{corpus}/p4_16_samples/{name}.stf"));
            out.push((name.to_string(), gunzip(&gz), packets));
        }
    }
    let stfs = files(&format!("{dir}/../../p4src/tests"), ".stf");
    let packets = stfs.iter().flat_map(|p| stf_packets(p)).collect();
    let json = gunzip(&format!("{corpus}/p4src/lossless.json.gz"));
    out.push(("lossless.p4".to_string(), json, packets));
    out
}

/// Bit `i` of `b`, counted from the first byte's most significant bit.
fn bit(b: &[u8], i: usize) -> u8 {
    (b[i / 8] >> (7 - i % 8)) & 1
}

/// Field `f`'s value as bits, most significant first (a varbit: its current width).
fn field_bits(prog: &Prog, phv: &Phv, f: u32) -> Vec<u8> {
    let fi = &prog.fields[f as usize];
    let (bytes, width) = match fi.slot {
        Slot::Narrow(s) => {
            return (0..fi.width)
                .rev()
                .map(|i| (phv.n(s) >> i) as u8 & 1)
                .collect()
        }
        Slot::Wide { off, len } => (&phv.wide[off as usize..(off + len) as usize], fi.width),
        Slot::Varbit { off, len, vl } => (
            &phv.wide[off as usize..(off + len) as usize],
            phv.vl_bits[vl as usize],
        ),
    };
    let n = bytes.len() * 8;
    (n - width as usize..n).map(|i| bit(bytes, i)).collect()
}

/// The deparser by definition: the valid headers in deparser order, each field's bits in
/// turn, each header padded with zero bits to a whole byte, then the payload.
fn serialize(prog: &Prog, pkt: &Pkt) -> Vec<u8> {
    let mut bits = Vec::new();
    for &h in &prog.deparsers[0].order {
        if !pkt.phv.valid[h as usize] {
            continue;
        }
        let info = &prog.headers[h as usize];
        for f in info.first_field..info.first_field + info.nfields {
            bits.extend(field_bits(prog, &pkt.phv, f));
        }
        bits.resize(bits.len().div_ceil(8) * 8, 0);
    }
    let mut out: Vec<u8> = bits
        .chunks(8)
        .map(|c| c.iter().fold(0, |a, &b| (a << 1) | b))
        .collect();
    out.extend_from_slice(&pkt.data[pkt.cursor.min(pkt.data.len())..]);
    out
}

/// Header layouts (`switch_engine::layout`: a header's fields read and written in one loop
/// over offsets compiled at load). For the programs above and their packets (bit-flipped or
/// cut short now and then: a header at a packet's very end is read field by field), the
/// parser fills the header vector exactly as the same program loaded without layouts does
/// (the field-by-field path), and every header parsed from whole bytes holds the packet's
/// bits at its offset, field by field; after random stores, `setValid`s and `setInvalid`s,
/// the deparser (leaving unchanged headers as parsed, or writing every header) writes what
/// the bit-by-bit serialization writes.
#[test]
fn header_layouts_parse_and_deparse_bit_by_bit() {
    let mut rng = Rng(0x1f83_d9ab_fb41_bd6b);
    let (mut programs, mut via_layout, mut deparsed) = (0usize, 0usize, 0usize);
    for (name, text, packets) in programs_with_packets() {
        let json = p4_bmv2_json::Program::from_json(&text).unwrap();
        // A program the engine refuses is the conformance run's business.
        let (Ok(prog), Ok(mut plain)) = (
            switch_engine::load::load(&json),
            switch_engine::load::load(&json),
        ) else {
            continue;
        };
        if packets.is_empty() || prog.parsers.is_empty() || prog.deparsers.is_empty() {
            continue;
        }
        for h in &mut plain.headers {
            h.layout = None;
        }
        programs += 1;
        let (code, plain_code) = (Code::new(&prog), Code::new(&plain));
        let (mut rt, mut plain_rt) = (empty_runtime(&prog), empty_runtime(&plain));
        let headers: Vec<u32> = (0..prog.headers.len() as u32)
            .filter(|&h| !prog.headers[h as usize].metadata)
            .collect();
        for p in packets.iter().cycle().take(packets.len() * 10) {
            let mut data = p.clone();
            match rng.below(4) {
                0 if !data.is_empty() => {
                    let i = rng.below(data.len());
                    data[i] ^= 1 << rng.below(8);
                }
                1 => data.truncate(rng.below(data.len() + 1)),
                _ => {}
            }
            let (mut a, mut b) = (Pkt::new(&prog), Pkt::new(&plain));
            a.data.clone_from(&data);
            b.data = data;
            let ra = exec::parse(&prog, &code, &mut rt, &mut a, 0);
            let rb = exec::parse(&plain, &plain_code, &mut plain_rt, &mut b, 0);
            let what = format!("{name}: {p:02x?}");
            assert_eq!(ra, rb, "{what}");
            assert_eq!(a.cursor, b.cursor, "{what}");
            assert_eq!(a.phv.narrow, b.phv.narrow, "{what}");
            assert_eq!(a.phv.wide, b.phv.wide, "{what}");
            assert_eq!(a.phv.vl_bits, b.phv.vl_bits, "{what}");
            assert_eq!(a.phv.valid, b.phv.valid, "{what}");
            assert_eq!(a.phv.src, b.phv.src, "{what}");
            for &h in &headers {
                let Some(at) = a.phv.parsed_at(h).filter(|_| a.phv.valid[h as usize]) else {
                    continue;
                };
                let info = &prog.headers[h as usize];
                via_layout += usize::from(info.layout.is_some());
                let mut from = at * 8;
                for f in info.first_field..info.first_field + info.nfields {
                    let got = field_bits(&prog, &a.phv, f);
                    let want: Vec<u8> = (from..from + got.len()).map(|i| bit(&a.data, i)).collect();
                    assert_eq!(got, want, "{what}: field {f}");
                    from += got.len();
                }
            }
            if !headers.is_empty() {
                change_headers(&mut rng, &prog, &headers, &mut a.phv);
            }
            if rng.below(2) == 0 {
                a.phv.src.fill(0);
            }
            let want = serialize(&prog, &a);
            exec::deparse(&prog, &mut a, 0);
            assert_eq!(a.data, want, "{what}");
            deparsed += 1;
        }
    }
    assert!(
        programs >= 150 && via_layout >= 10_000 && deparsed >= 5_000,
        "{programs} programs, {via_layout} headers read through a layout, {deparsed} packets deparsed"
    );
}

/// p4c's `tbl_act` tables (no key, a constant default entry without action data) are action
/// calls of their default action: no node leads to the table any more, and the call goes
/// where the table's miss went.
#[test]
fn keyless_constant_tables_become_calls() {
    use switch_engine::program::Next;
    let dir = format!("{}/tests", env!("CARGO_MANIFEST_DIR"));
    let mut converted = 0usize;
    for sub in ["stf", "programs"] {
        for entry in std::fs::read_dir(format!("{dir}/{sub}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let json = p4_bmv2_json::Program::from_json(&text).unwrap();
            let prog = switch_engine::load::load(&json).unwrap();
            let mut nexts: Vec<Next> = prog.pipelines.iter().map(|p| p.init).collect();
            nexts.extend(prog.conds.iter().flat_map(|c| [c.t, c.f]));
            nexts.extend(prog.calls.iter().map(|c| c.next));
            let tables = json.pipelines.iter().flat_map(|p| &p.tables);
            for (t, jt) in tables.enumerate() {
                let Some(d) = jt.default_entry.as_ref().filter(|d| {
                    jt.key.is_empty()
                        && d.action_const
                        && d.action_entry_const
                        && d.action_data.is_empty()
                }) else {
                    continue;
                };
                let name = path.display();
                assert!(
                    !nexts.contains(&Next::Table(t as u32)),
                    "{name}: {} is still applied",
                    jt.name
                );
                let info = &prog.tables[t];
                let action = prog
                    .actions
                    .iter()
                    .position(|a| a.json_id == d.action_id)
                    .unwrap() as u32;
                let miss = info.hit_miss.map_or(info.next_of(action), |(_, m)| m);
                assert!(
                    prog.calls
                        .iter()
                        .any(|c| c.action == action && c.next == miss),
                    "{name}: no call of {}'s default action",
                    jt.name
                );
                converted += 1;
            }
        }
    }
    assert!(converted >= 5, "only {converted} keyless tables converted");
}

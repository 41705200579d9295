//! Compile time per phase: `cargo run --release -p p4-bmv2-backend --example compile_bench --
//! PROG.p4 OUT.json [ITERATIONS]`. Preprocesses once with the system cpp (p4-compile's
//! `p4include`), then runs parse, check, midend (`p4-midend`'s passes) and lowering to the BMv2 JSON model, JSON
//! serialisation and P4Info generation ITERATIONS times, and writes the median of each phase in
//! microseconds as one JSON object to OUT.json (and stdout).

use p4_syntax::{Diagnostics, SourceMap};
use std::process::{Command, ExitCode};
use std::time::Instant;

fn median(mut v: Vec<u128>) -> u128 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(prog), Some(out_path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: compile_bench PROG.p4 OUT.json [ITERATIONS]");
        return ExitCode::FAILURE;
    };
    let iterations: usize = match args.get(3).map(|s| s.parse()) {
        None => 20,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("error: ITERATIONS must be a positive integer");
            return ExitCode::FAILURE;
        }
    };
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/../p4-compile/p4include");
    let t_pp = Instant::now();
    let out = match Command::new("cpp")
        .args(["-x", "c", "-undef", "-nostdinc", "-w", "-D__TARGET_BMV2__"])
        .arg(format!("-I{include}"))
        .arg(prog)
        .output()
    {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprint!("{}", String::from_utf8_lossy(&o.stderr));
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: cannot run cpp: {e}");
            return ExitCode::FAILURE;
        }
    };
    let preprocess_us = t_pp.elapsed().as_micros();
    let map = SourceMap::new(prog, String::from_utf8_lossy(&out.stdout).into_owned());
    let mut phases: [Vec<u128>; 5] = Default::default();
    let mut json_bytes = 0;
    for _ in 0..iterations {
        let mut diags = Diagnostics::default();
        let t0 = Instant::now();
        let ast = p4_syntax::parse(&map, &mut diags);
        let t1 = Instant::now();
        let typed = p4_sema::check(&ast, &mut diags);
        let t2 = Instant::now();
        let Some(mut ir) = typed else {
            eprint!("{}", diags.render(&map));
            return ExitCode::FAILURE;
        };
        p4_midend::run(&mut ir);
        let Ok(output) = p4_bmv2_backend::compile(&ir, &map, &mut diags) else {
            eprint!("{}", diags.render(&map));
            return ExitCode::FAILURE;
        };
        let t3 = Instant::now();
        json_bytes = output.json.to_json_pretty().len();
        let t4 = Instant::now();
        if let Err(e) = p4_p4info::generate(&output.control_plane) {
            eprintln!("error: P4Info: {e:?}");
            return ExitCode::FAILURE;
        }
        let t5 = Instant::now();
        for (v, d) in phases
            .iter_mut()
            .zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4])
        {
            v.push(d.as_micros());
        }
    }
    let [parse, check, lower, emit, p4info] = phases.map(median);
    let text = format!(
        "{{\"program\": {prog:?}, \"preprocessed_bytes\": {}, \"json_bytes\": {json_bytes}, \
         \"iterations\": {iterations}, \"preprocess_us\": {preprocess_us}, \
         \"parse_us_median\": {parse}, \"check_us_median\": {check}, \
         \"midend_us_median\": {lower}, \"emit_json_us_median\": {emit}, \
         \"p4info_us_median\": {p4info}}}\n",
        map.text().len()
    );
    print!("{text}");
    if let Err(e) = std::fs::write(out_path, text) {
        eprintln!("error: {out_path}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

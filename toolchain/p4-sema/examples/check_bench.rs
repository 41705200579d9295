//! Times the front end on one program: `cargo run --release -p p4-sema --example check_bench
//! -- PROG.p4 [ITERATIONS]`. Preprocesses once with the system cpp (the include path of
//! p4-compile's own `core.p4`/`v1model.p4`), then parses and checks ITERATIONS times and prints
//! one JSON object with the median time of each phase in microseconds.

use p4_syntax::{Diagnostics, SourceMap};
use std::process::{Command, ExitCode};
use std::time::Instant;

fn median(mut v: Vec<u128>) -> u128 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(prog) = args.get(1) else {
        eprintln!("usage: check_bench PROG.p4 [ITERATIONS]");
        return ExitCode::FAILURE;
    };
    let iterations: usize = match args.get(2).map(|s| s.parse()) {
        None => 20,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("error: ITERATIONS must be a positive integer");
            return ExitCode::FAILURE;
        }
    };
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/../p4-compile/p4include");
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
    let map = SourceMap::new(prog, String::from_utf8_lossy(&out.stdout).into_owned());
    let (mut parse_us, mut check_us) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        let mut diags = Diagnostics::default();
        let t0 = Instant::now();
        let ast = p4_syntax::parse(&map, &mut diags);
        let t1 = Instant::now();
        let typed = p4_sema::check(&ast, &mut diags);
        let t2 = Instant::now();
        if typed.is_none() || diags.has_errors() {
            eprint!("{}", diags.render(&map));
            return ExitCode::FAILURE;
        }
        parse_us.push((t1 - t0).as_micros());
        check_us.push((t2 - t1).as_micros());
    }
    println!(
        "{{\"program\": {prog:?}, \"preprocessed_bytes\": {}, \"iterations\": {iterations}, \
         \"parse_us_median\": {}, \"check_us_median\": {}}}",
        map.text().len(),
        median(parse_us),
        median(check_us)
    );
    ExitCode::SUCCESS
}

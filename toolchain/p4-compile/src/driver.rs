//! The pass pipeline: preprocess with the system cpp, parse, check, emit.

use crate::cli::Options;
use p4_syntax::{Diagnostics, SourceMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `#include <core.p4>` and `<v1model.p4>` are found: installed next to the binary
/// (`<prefix>/bin/p4-compile` and `<prefix>/share/p4c/p4include`), else in the source tree.
pub fn include_dir() -> PathBuf {
    if let Ok(exe) = std::env::current_exe() {
        if let Some(bin) = exe.parent() {
            let installed = bin.join("../share/p4c/p4include");
            if installed.join("core.p4").is_file() {
                return installed;
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("p4include")
}

/// Runs cpp as p4c does: C language, no system headers or predefined macros, comments dropped,
/// line markers kept so that diagnostics name the original files.
fn preprocess(opts: &Options) -> Result<String, ()> {
    let mut cmd = Command::new("cpp");
    cmd.args(["-x", "c", "-undef", "-nostdinc", "-w"])
        .arg(format!("-I{}", include_dir().display()))
        .args([
            "-D__TARGET_BMV2__",
            "-D__p4c__=1",
            "-D__p4c_major__=1",
            "-D__p4c_minor__=2",
            "-D__p4c_patchlevel__=4",
        ]);
    for i in &opts.includes {
        cmd.arg(format!("-I{i}"));
    }
    cmd.args(&opts.macros).arg(&opts.input);
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: cannot run the C preprocessor 'cpp': {e}");
            return Err(());
        }
    };
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        eprintln!("error: preprocessing {} failed", opts.input.display());
        return Err(());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn run(opts: &Options) -> Result<(), ()> {
    if !opts.input.is_file() {
        eprintln!("error: {}: no such file", opts.input.display());
        return Err(());
    }
    let text = preprocess(opts)?;
    let map = SourceMap::new(&opts.input.to_string_lossy(), text);
    let mut diags = Diagnostics::default();
    let program = p4_syntax::parse(&map, &mut diags);
    // Semantic checks need a whole tree: after syntax errors they would only report cascades.
    if !opts.parse_only && !diags.has_errors() {
        let typed = p4_sema::check(&program, &mut diags);
        if let (Some(ir), true) = (&typed, opts.dump_ir) {
            println!("{ir:#?}");
        }
        if let (Some(ir), false) = (typed, opts.check_only) {
            if let Some(out) = p4_bmv2_backend::compile(&ir, &mut diags) {
                report(&diags, &map)?;
                return write_outputs(opts, &out);
            }
        }
    }
    report(&diags, &map)
}

/// Writes the BMv2 JSON (`OUTDIR/PROG.json`, or `-o OUT.json` for p4c-bm2-ss) and the P4Info
/// files, each in the format its extension names (`.txtpb`/`.txt`, `.json`, `.bin`).
fn write_outputs(opts: &Options, out: &p4_bmv2_backend::Output) -> Result<(), ()> {
    let stem = opts
        .input
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let json_path = match (&opts.output, opts.bm2_ss) {
        (Some(o), true) => o.clone(),
        (Some(dir), false) => dir.join(format!("{stem}.json")),
        (None, true) => PathBuf::from(format!("{stem}.json")),
        (None, false) => PathBuf::from(format!("{stem}.json")),
    };
    if let Some(dir) = json_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("error: {}: {e}", dir.display());
            return Err(());
        }
    }
    write(&json_path, out.json.to_json_pretty().into_bytes())?;
    if opts.p4runtime_files.is_empty() {
        return Ok(());
    }
    let info = match p4_p4info::generate(&out.control_plane) {
        Ok(i) => i,
        Err(errs) => {
            for e in errs {
                eprintln!("error: P4Info: {e}");
            }
            return Err(());
        }
    };
    for f in &opts.p4runtime_files {
        let ext = f.extension().map(|e| e.to_string_lossy().into_owned());
        let fmt = opts.p4runtime_format.clone().or(ext).unwrap_or_default();
        let bytes = match fmt.as_str() {
            "json" => p4runtime_proto::to_json(&info).into_bytes(),
            "bin" => prost::Message::encode_to_vec(&info),
            _ => p4_p4info::to_txtpb(&info).into_bytes(),
        };
        write(f, bytes)?;
    }
    Ok(())
}

fn write(path: &Path, bytes: Vec<u8>) -> Result<(), ()> {
    std::fs::write(path, bytes).map_err(|e| eprintln!("error: {}: {e}", path.display()))
}

fn report(diags: &Diagnostics, map: &SourceMap) -> Result<(), ()> {
    eprint!("{}", diags.render(map));
    if diags.has_errors() {
        Err(())
    } else {
        Ok(())
    }
}

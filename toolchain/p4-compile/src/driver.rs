//! Runs the pass list (`passes::passes()`) over one program: preprocess with the system cpp,
//! then each pass in turn, then writes the outputs. Returns what it has to say instead of
//! printing it; `main` renders it.

use crate::cli::Options;
use crate::passes::{self, Stage};
use p4_syntax::{Diagnostics, SourceMap};
use p4runtime_proto::p4info::P4Info;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A compilation that went through: the program's warnings (rendered with file, line and
/// caret) and, for `--dump-after`/`--dump-ir`, the program printed as P4.
#[derive(Debug, Default)]
pub struct Report {
    pub diagnostics: String,
    pub dump: Option<String>,
}

/// A compilation that stopped: the diagnostics gathered until then and why it stopped.
#[derive(Debug)]
pub struct Failure {
    pub diagnostics: String,
    pub error: CompileError,
}

#[derive(Debug)]
pub enum CompileError {
    NoInput(PathBuf),
    /// `cpp` could not be started.
    Cpp(std::io::Error),
    /// `cpp` failed; its messages are the failure's diagnostics.
    Preprocess(PathBuf),
    /// Errors in the program, all in the failure's diagnostics.
    Program {
        errors: usize,
    },
    P4Info(Vec<p4_p4info::P4InfoError>),
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    /// `--dump-after` names no pass after which there is a P4 program to print.
    NotDumpable(String),
}

impl CompileError {
    /// Whether the error says more than the diagnostics already do.
    pub fn has_message(&self) -> bool {
        !matches!(self, CompileError::Program { .. })
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::NoInput(p) => write!(f, "{}: no such file", p.display()),
            CompileError::Cpp(e) => write!(f, "cannot run the C preprocessor 'cpp': {e}"),
            CompileError::Preprocess(p) => write!(f, "preprocessing {} failed", p.display()),
            CompileError::Program { errors } => write!(f, "{errors} error(s) in the program"),
            CompileError::P4Info(errs) => {
                let lines: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                write!(f, "P4Info: {}", lines.join("\nerror: P4Info: "))
            }
            CompileError::Write { path, error } => write!(f, "{}: {error}", path.display()),
            CompileError::NotDumpable(name) => write!(
                f,
                "--dump-after {name}: not a pass after which the program is P4 (see --list-passes)"
            ),
        }
    }
}

impl std::error::Error for CompileError {}

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

fn fail(diagnostics: String, error: CompileError) -> Failure {
    Failure { diagnostics, error }
}

/// Runs cpp as p4c does: C language, no system headers or predefined macros, comments dropped,
/// line markers kept so that diagnostics name the original files.
fn preprocess(opts: &Options) -> Result<String, Failure> {
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
    let out = cmd
        .output()
        .map_err(|e| fail(String::new(), CompileError::Cpp(e)))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        return Err(fail(stderr, CompileError::Preprocess(opts.input.clone())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn run(opts: &Options) -> Result<Report, Failure> {
    let dump_after = match (&opts.dump_after, opts.dump_ir) {
        (Some(name), _) => Some(name.as_str()),
        (None, true) => Some("check"),
        (None, false) => None,
    };
    if let Some(name) = dump_after.filter(|n| !passes::dumpable(n)) {
        return Err(fail(String::new(), CompileError::NotDumpable(name.into())));
    }
    if !opts.input.is_file() {
        return Err(fail(
            String::new(),
            CompileError::NoInput(opts.input.clone()),
        ));
    }
    let text = preprocess(opts)?;
    let map = SourceMap::new(&opts.input.to_string_lossy(), text);
    let mut diags = Diagnostics::default();
    let mut report = Report::default();
    let mut ast = None;
    let mut ir = None;
    let mut lowered = None;
    for step in passes::passes() {
        match step.stage {
            Stage::Parse => ast = Some(p4_syntax::parse(&map, &mut diags)),
            Stage::Check => {
                // Semantic checks need a whole tree: after syntax errors they would only
                // report cascades.
                if opts.parse_only || diags.has_errors() {
                    break;
                }
                ir = ast.as_ref().and_then(|a| p4_sema::check(a, &mut diags));
            }
            Stage::Midend(run) => {
                if let Some(p) = ir.as_mut() {
                    run(p);
                }
            }
            Stage::Lower => {
                if let Some(p) = &ir {
                    lowered = Some(p4_bmv2_backend::compile(p, &map, &mut diags));
                }
            }
        }
        if ir.is_none() && matches!(step.stage, Stage::Check) {
            break;
        }
        if dump_after == Some(step.name) {
            report.dump = ir.as_ref().map(p4_sema::print::to_p4);
            break;
        }
        if opts.check_only && matches!(step.stage, Stage::Check) {
            break;
        }
    }
    report.diagnostics = diags.render(&map);
    // p4c-bm2-ss writes P4Info after its front end and only then refuses a program without
    // `main` (in its midend): an empty P4Info, as p4c's outputs for such programs hold.
    let no_main = ir.as_ref().is_some_and(|p| p.main.is_none());
    if no_main && diags.error_count() == 1 {
        if let Err(error) = write_p4info(opts, &P4Info::default()) {
            return Err(fail(report.diagnostics, error));
        }
    }
    // Likewise p4c-bm2-ss writes P4Info before its backend refuses a program: so do we when
    // only the lowering refused it and its control-plane model is whole.
    if let Some(Err(p4_bmv2_backend::Refused {
        control_plane: Some(cp),
    })) = &lowered
    {
        let written = p4_p4info::generate(cp)
            .map_err(CompileError::P4Info)
            .and_then(|info| write_p4info(opts, &info));
        if let Err(error) = written {
            return Err(fail(report.diagnostics, error));
        }
    }
    if diags.has_errors() {
        let errors = diags.error_count();
        return Err(fail(report.diagnostics, CompileError::Program { errors }));
    }
    if let Some(Ok(out)) = lowered {
        if let Err(error) = write_outputs(opts, &out) {
            return Err(fail(report.diagnostics, error));
        }
    }
    Ok(report)
}

/// Writes the BMv2 JSON (`OUTDIR/PROG.json`, or `-o OUT.json` for p4c-bm2-ss) and the P4Info
/// files, each in the format its extension names (`.txtpb`/`.txt`, `.json`, `.bin`).
fn write_outputs(opts: &Options, out: &p4_bmv2_backend::Output) -> Result<(), CompileError> {
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
        std::fs::create_dir_all(dir).map_err(|error| CompileError::Write {
            path: dir.to_path_buf(),
            error,
        })?;
    }
    write(&json_path, out.json.to_json_pretty().into_bytes())?;
    if opts.p4runtime_files.is_empty() {
        return Ok(());
    }
    let info = p4_p4info::generate(&out.control_plane).map_err(CompileError::P4Info)?;
    write_p4info(opts, &info)
}

/// Writes `info` to each `--p4runtime-files` file in the format its extension names.
fn write_p4info(opts: &Options, info: &P4Info) -> Result<(), CompileError> {
    for f in &opts.p4runtime_files {
        let ext = f.extension().map(|e| e.to_string_lossy().into_owned());
        let fmt = opts.p4runtime_format.clone().or(ext).unwrap_or_default();
        let bytes = match fmt.as_str() {
            "json" => p4runtime_proto::to_json(info).into_bytes(),
            "bin" => prost::Message::encode_to_vec(info),
            _ => p4_p4info::to_txtpb(info).into_bytes(),
        };
        write(f, bytes)?;
    }
    Ok(())
}

fn write(path: &Path, bytes: Vec<u8>) -> Result<(), CompileError> {
    std::fs::write(path, bytes).map_err(|error| CompileError::Write {
        path: path.to_path_buf(),
        error,
    })
}

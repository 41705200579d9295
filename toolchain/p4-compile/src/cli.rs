//! Command-line parsing by hand: p4c accepts `-Idir` and `-I dir`, `-DX=1`, `--opt=value` and
//! `--opt value`, and harnesses pass options we only need to accept.

use std::path::PathBuf;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `p4c-bm2-ss`: `-o` names the JSON file; `p4-compile`: `-o` names a directory.
    pub bm2_ss: bool,
    pub includes: Vec<String>,
    /// `-D` and `-U` in order, as cpp arguments.
    pub macros: Vec<String>,
    pub output: Option<PathBuf>,
    pub p4runtime_files: Vec<PathBuf>,
    pub p4runtime_format: Option<String>,
    pub parse_only: bool,
    /// Stop after semantic checks (no JSON, no P4Info).
    pub check_only: bool,
    /// Print the typed IR after semantic checks (for compiler developers); `--dump-after check`.
    pub dump_ir: bool,
    /// Print the program as P4 after this pass and stop.
    pub dump_after: Option<String>,
    pub input: PathBuf,
}

/// A command line that cannot be run; main prints it as `error: ...` above the usage line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    #[error("{0} needs a value")]
    MissingValue(String),
    #[error("unsupported target '{0}' (only bmv2)")]
    Target(String),
    #[error("unsupported architecture '{0}' (only v1model)")]
    Arch(String),
    #[error("unsupported language '{0}' (only p4-16)")]
    Language(String),
    #[error("unknown option '{0}'")]
    UnknownOption(String),
    #[error("more than one input file ('{0}')")]
    SecondInput(String),
    #[error("no input file")]
    NoInput,
}

pub enum Parsed {
    Run(Options),
    Help(String),
    ListPasses,
}

fn prog_name(args: &[String]) -> String {
    args.first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "p4-compile".to_string())
}

pub fn usage_line(args: &[String]) -> String {
    if prog_name(args) == "p4c-bm2-ss" {
        "usage: p4c-bm2-ss [-I DIR] [-D NAME[=VAL]] -o OUT.json [--p4runtime-files FILE[,FILE]] PROG.p4".to_string()
    } else {
        "usage: p4-compile --target bmv2 --arch v1model [--std p4-16] [-I DIR] [-D NAME[=VAL]] [-o OUTDIR] [--p4runtime-files FILE[,FILE]] [--list-passes] [--dump-after PASS] PROG.p4".to_string()
    }
}

/// Options p4c takes that change nothing for this target; accepted so that scripts work.
const IGNORED_WITH_VALUE: &[&str] = &[
    "--p4v",
    "--Wdisable",
    "--Wwarn",
    "--Werror",
    "--emit-externs",
    "--pp",
    "--toJSON",
    "--max-error-count",
];
const IGNORED_FLAGS: &[&str] = &["-v", "--Wdisable", "--Werror", "--disable-annotations"];

pub fn parse_args(args: &[String]) -> Result<Parsed, CliError> {
    let mut o = Options {
        bm2_ss: prog_name(args) == "p4c-bm2-ss",
        ..Options::default()
    };
    let mut input = None;
    let mut i = 1;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        // `--opt=value` and `--opt value`.
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if a.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, CliError> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            let v = args
                .get(i)
                .cloned()
                .ok_or_else(|| CliError::MissingValue(what.to_string()))?;
            i += 1;
            Ok(v)
        };
        match key.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help(format!("{}\n", usage_line(args)))),
            "--target" | "-b" => {
                let t = value("--target")?;
                if t != "bmv2" && t != "bmv2-ss" {
                    return Err(CliError::Target(t));
                }
            }
            "--arch" | "-a" => {
                let t = value("--arch")?;
                if t != "v1model" {
                    return Err(CliError::Arch(t));
                }
            }
            "--std" | "-x" => {
                let s = value("--std")?;
                if s != "p4-16" && s != "p4_16" {
                    return Err(CliError::Language(s));
                }
            }
            "-o" => o.output = Some(PathBuf::from(value("-o")?)),
            "-I" => o.includes.push(value("-I")?),
            "-D" => o.macros.push(format!("-D{}", value("-D")?)),
            "-U" => o.macros.push(format!("-U{}", value("-U")?)),
            "--p4runtime-files" => {
                for f in value("--p4runtime-files")?.split(',') {
                    if !f.is_empty() {
                        o.p4runtime_files.push(PathBuf::from(f));
                    }
                }
            }
            "--p4runtime-format" => o.p4runtime_format = Some(value("--p4runtime-format")?),
            "--parse-only" => o.parse_only = true,
            "--check-only" => o.check_only = true,
            "--dump-ir" => o.dump_ir = true,
            "--dump-after" => o.dump_after = Some(value("--dump-after")?),
            "--list-passes" => return Ok(Parsed::ListPasses),
            k if IGNORED_WITH_VALUE.contains(&k) && inline.is_some() => {}
            k if IGNORED_FLAGS.contains(&k) => {}
            k if IGNORED_WITH_VALUE.contains(&k) => {
                value(k)?;
            }
            k if k.starts_with("-I") && k.len() > 2 => o.includes.push(k[2..].to_string()),
            k if k.starts_with("-D") && k.len() > 2 => o.macros.push(a.clone()),
            k if k.starts_with("-U") && k.len() > 2 => o.macros.push(a.clone()),
            k if k.starts_with("-o") && k.len() > 2 => o.output = Some(PathBuf::from(&a[2..])),
            k if k.starts_with('-') && k.len() > 1 => {
                return Err(CliError::UnknownOption(a.clone()))
            }
            _ => {
                if input.is_some() {
                    return Err(CliError::SecondInput(a.clone()));
                }
                input = Some(PathBuf::from(a));
            }
        }
    }
    o.input = input.ok_or(CliError::NoInput)?;
    Ok(Parsed::Run(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options, String> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args(&v).map_err(|e| e.to_string())? {
            Parsed::Run(o) => Ok(o),
            Parsed::Help(_) | Parsed::ListPasses => Err("help".into()),
        }
    }

    #[test]
    fn p4c_command_line() {
        let o = run(&[
            "/x/p4-compile",
            "--target",
            "bmv2",
            "--arch=v1model",
            "--std",
            "p4-16",
            "-Iinc",
            "-I",
            "inc2",
            "-DX=1",
            "-D",
            "Y",
            "-o",
            "out",
            "--p4runtime-files",
            "a.txtpb,b.json",
            "prog.p4",
        ])
        .unwrap();
        assert!(!o.bm2_ss);
        assert_eq!(o.includes, vec!["inc", "inc2"]);
        assert_eq!(o.macros, vec!["-DX=1", "-DY"]);
        assert_eq!(o.output, Some(PathBuf::from("out")));
        assert_eq!(o.p4runtime_files.len(), 2);
        assert_eq!(o.input, PathBuf::from("prog.p4"));
    }

    #[test]
    fn bm2_ss_name_and_errors() {
        let o = run(&["p4c-bm2-ss", "-o", "x.json", "p.p4"]).unwrap();
        assert!(o.bm2_ss);
        assert_eq!(
            run(&["p4-compile", "--arch", "psa", "p.p4"]).unwrap_err(),
            "unsupported architecture 'psa' (only v1model)"
        );
        assert_eq!(run(&["p4-compile", "-o"]).unwrap_err(), "-o needs a value");
        assert_eq!(run(&["p4-compile"]).unwrap_err(), "no input file");
        assert!(run(&["p4-compile", "--bogus", "p.p4"]).is_err());
        assert_eq!(
            run(&["p4-compile", "--dump-after"]).unwrap_err(),
            "--dump-after needs a value"
        );
        let o = run(&["p4-compile", "--dump-after=parser-inline", "p.p4"]).unwrap();
        assert_eq!(o.dump_after.as_deref(), Some("parser-inline"));
    }
}

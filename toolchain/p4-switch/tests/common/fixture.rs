//! Test fixtures in P4 (`tests/fixtures/*.p4`), compiled when a test or bench needs them with the
//! workspace's own compiler, so that the switch's own tests never depend on `p4src/` (the tests
//! of `p4src/lossless.p4` on this switch compile it with [`compile_p4`]). Shared by the tests
//! (`tests/common`) and the benches (`#[path]` module).

/// The P4 compiler for test fixtures: `$P4C` (as `make` exports it), else the workspace's
/// `build/bin/p4-compile` (`make build`), else `target/release/p4-compile` (`cargo build
/// --release -p p4-compile`).
pub fn p4_compiler() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("P4C") {
        return p.into();
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    ["build/bin/p4-compile", "target/release/p4-compile"]
        .iter()
        .map(|c| root.join(c))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("no P4 compiler: run `make build` (or cargo build --release -p p4-compile), or set P4C")
        })
}

/// Compiles `tests/fixtures/NAME.p4` with [`p4_compiler`] (p4c's command line) and returns the
/// BMv2 JSON text.
pub fn compile_fixture(name: &str) -> String {
    compile_p4(&format!(
        "{}/tests/fixtures/{name}.p4",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// Compiles the P4 program at `src` (p4c's command line) and returns the BMv2 JSON text.
pub fn compile_p4(src: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = std::path::Path::new(src)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_else(|| panic!("{src}: not a P4 file name"));
    let dir = std::env::temp_dir().join(format!(
        "p4sw-fixture-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    let p4c = p4_compiler();
    let out = std::process::Command::new(&p4c)
        .args(["--target", "bmv2", "--arch", "v1model", "-o"])
        .arg(&dir)
        .arg(src)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", p4c.display()));
    let json = std::fs::read_to_string(dir.join(format!("{name}.json")));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{} {src}: {}",
        p4c.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    json.unwrap_or_else(|e| panic!("{name}.json from {}: {e}", p4c.display()))
}

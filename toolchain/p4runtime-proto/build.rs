//! Generates the P4Runtime messages and service from the schema that the PyPI `p4runtime`
//! package ships (its `_pb2` modules carry serialized FileDescriptorProtos), so the crate needs
//! neither protoc nor a copy of the .proto files.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

use prost::Message;
use prost_types::FileDescriptorSet;

/// Overrides the Python interpreter that has the `p4runtime` package installed.
const PYTHON_ENV: &str = "P4RUNTIME_PROTO_PYTHON";

fn fail(message: &str) -> ! {
    eprintln!("error: p4runtime-proto: {message}");
    exit(1);
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let script = manifest_dir.join("export_fds.py");
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rerun-if-env-changed={PYTHON_ENV}");

    let python = match env::var_os(PYTHON_ENV) {
        Some(python) => PathBuf::from(python),
        // The workspace root is two levels up: toolchain/p4runtime-proto.
        None => manifest_dir.join("../../.venv/bin/python"),
    };
    if !python.exists() {
        fail(&format!(
            "no Python interpreter at {}: run `make deps` at the workspace root (it creates \
             .venv with the `p4runtime` package) or set {PYTHON_ENV} to a Python that has \
             `p4runtime` installed",
            python.display()
        ));
    }
    // A reinstall of the package (another schema version) must regenerate the code.
    println!("cargo:rerun-if-changed={}", python.display());

    let fds_path = out_dir.join("p4runtime_fds.bin");
    let output = Command::new(&python)
        .arg(&script)
        .arg(&fds_path)
        .output()
        .unwrap_or_else(|err| fail(&format!("cannot run {}: {err}", python.display())));
    if !output.status.success() {
        fail(&format!(
            "{} {} failed ({}): {}",
            python.display(),
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    generate(&fds_path, &out_dir);
}

fn generate(fds_path: &Path, out_dir: &Path) {
    let bytes = std::fs::read(fds_path)
        .unwrap_or_else(|err| fail(&format!("cannot read {}: {err}", fds_path.display())));
    let fds = FileDescriptorSet::decode(bytes.as_slice()).unwrap_or_else(|err| {
        fail(&format!(
            "{} is not a FileDescriptorSet: {err}",
            fds_path.display()
        ))
    });

    let mut config = tonic_prost_build::Config::new();
    // prost::Name on every message lets callers find its descriptor for text/JSON encoding.
    config.enable_type_names();
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .out_dir(out_dir)
        .include_file("p4runtime_includes.rs")
        .compile_fds_with_config(fds, config)
        .unwrap_or_else(|err| fail(&format!("code generation failed: {err}")));
}

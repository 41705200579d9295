//! Generates the P4Runtime messages and service from `p4runtime.fds.bin`, the schema of the PyPI
//! `p4runtime` package as a serialized FileDescriptorSet committed in this crate (`make proto`
//! regenerates it). Compiling from a descriptor set needs neither protoc nor Python.

use std::env;
use std::path::PathBuf;
use std::process::exit;

use prost::Message;
use prost_types::FileDescriptorSet;

fn fail(message: &str) -> ! {
    eprintln!("error: p4runtime-proto: {message}");
    exit(1);
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let fds_path = manifest_dir.join("p4runtime.fds.bin");
    println!("cargo:rerun-if-changed={}", fds_path.display());

    let bytes = std::fs::read(&fds_path)
        .unwrap_or_else(|err| fail(&format!("cannot read {}: {err}", fds_path.display())));
    let fds = FileDescriptorSet::decode(bytes.as_slice()).unwrap_or_else(|err| {
        fail(&format!(
            "{} is not a FileDescriptorSet ({err}): regenerate it with `make proto`",
            fds_path.display()
        ))
    });

    let mut config = tonic_prost_build::Config::new();
    // prost::Name on every message lets callers find its descriptor for text/JSON encoding.
    config.enable_type_names();
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .out_dir(&out_dir)
        .include_file("p4runtime_includes.rs")
        .compile_fds_with_config(fds, config)
        .unwrap_or_else(|err| fail(&format!("code generation failed: {err}")));
}

//! `p4-compile` / `p4c-bm2-ss`: p4c's command line for the BMv2 v1model target.

mod cli;
mod driver;
mod passes;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let opts = match cli::parse_args(&args) {
        Ok(cli::Parsed::Run(o)) => o,
        Ok(cli::Parsed::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(cli::Parsed::ListPasses) => {
            print!("{}", passes::listing());
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("error: {msg}");
            eprintln!("{}", cli::usage_line(&args));
            return ExitCode::FAILURE;
        }
    };
    match driver::run(&opts) {
        Ok(report) => {
            print!("{}", report.dump.unwrap_or_default());
            eprint!("{}", report.diagnostics);
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprint!("{}", failure.diagnostics);
            if failure.error.has_message() {
                eprintln!("error: {}", failure.error);
            }
            ExitCode::FAILURE
        }
    }
}

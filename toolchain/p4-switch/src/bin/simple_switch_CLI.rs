//! bmv2's runtime CLI client: commands from stdin to the switch's `--thrift-port`.

fn main() {
    std::process::exit(p4_switch::cli_server::client_main());
}

//! The runtime CLI's wire protocol (`--thrift-port N`; no Thrift): a TCP connection on
//! 127.0.0.1 carrying one command per line from the client; for each, the switch answers
//! `OK <n>\n` or `ERR <n>\n` followed by `n` bytes of text (what bmv2's CLI prints, error
//! lines included).

use crate::runtime::Handle;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub struct CliServer {
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl CliServer {
    pub fn start(addr: &str, handle: Handle) -> std::io::Result<CliServer> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let bound = listener.local_addr()?;
        let h = handle;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("cli".into())
            .spawn(move || {
                while !h.stopping() && !stop2.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let h = h.clone();
                            let _ = std::thread::Builder::new()
                                .name("cli-conn".into())
                                .spawn(move || serve(stream, &h));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(50)),
                    }
                }
            })?;
        Ok(CliServer {
            addr: bound,
            thread: Some(thread),
            stop,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for CliServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(stream: TcpStream, h: &Handle) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    // One write per answer, sent at once: with Nagle's algorithm a reply in several writes
    // waited for the client's delayed ACK, about 40 ms a command, so that p4c's STF harness,
    // which sends a packet 1 s after its last command, overtook a long command list.
    let _ = stream.set_nodelay(true);
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        match reader.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if h.stopping() {
                    return;
                }
                continue;
            }
            Err(_) => return,
        }
        let cmd = std::mem::take(&mut line);
        let reply = h
            .exec_core(move |core, now| {
                crate::cli::execute(core, now, cmd.trim()).map_err(|e| e.to_string())
            })
            .unwrap_or_else(|| Err("the switch is stopping".into()));
        let (tag, text) = match reply {
            Ok(t) => ("OK", t),
            Err(e) => ("ERR", e),
        };
        if out
            .write_all(format!("{tag} {}\n{text}", text.len()).as_bytes())
            .is_err()
        {
            return;
        }
    }
}

/// The client side: sends `line`, returns `Ok(text)` or `Err(text)` as the switch answered.
pub struct CliClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl CliClient {
    pub fn connect(addr: &str) -> std::io::Result<CliClient> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        Ok(CliClient {
            writer: s.try_clone()?,
            reader: BufReader::new(s),
        })
    }

    pub fn run(&mut self, line: &str) -> std::io::Result<Result<String, String>> {
        let request = format!("{}\n", line.replace('\n', " "));
        self.writer.write_all(request.as_bytes())?;
        let mut head = String::new();
        self.reader.read_line(&mut head)?;
        let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed reply");
        let (tag, n) = head.trim().split_once(' ').ok_or_else(bad)?;
        let n: usize = n.parse().map_err(|_| bad())?;
        let mut body = vec![0u8; n];
        self.reader.read_exact(&mut body)?;
        let text = String::from_utf8_lossy(&body).into_owned();
        Ok(if tag == "OK" { Ok(text) } else { Err(text) })
    }
}

/// `simple_switch_CLI [--thrift-port N] [--thrift-ip IP] [--json FILE]`: reads commands from
/// stdin until EOF, prints the switch's answers; exit 0 at EOF, 1 when the switch is unreachable.
/// `--json` is accepted for compatibility: names come from the running switch.
pub fn client_main() -> i32 {
    let mut port = 9090u16;
    let mut ip = "127.0.0.1".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--thrift-port" => match args.next().and_then(|v| v.parse().ok()) {
                Some(p) => port = p,
                None => {
                    eprintln!("--thrift-port needs a port number");
                    return 2;
                }
            },
            "--thrift-ip" => match args.next() {
                Some(v) => ip = v,
                None => {
                    eprintln!("--thrift-ip needs an address");
                    return 2;
                }
            },
            "--json" | "--pre" => {
                args.next();
            }
            other => {
                eprintln!("unknown argument {other}");
                return 2;
            }
        }
    }
    let addr = format!("{ip}:{port}");
    let mut client = match CliClient::connect(&addr) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Could not connect to the switch at {addr}: {e}");
            return 1;
        }
    };
    let stdin = std::io::stdin();
    let mut line = String::new();
    // As bmv2's CLI (Python's `cmd`): the banner, then the prompt before every line read,
    // whether stdin is a terminal or a file; its test cuts the output at the prompts.
    println!("Control utility for runtime P4 table manipulation");
    loop {
        print!("RuntimeCmd: ");
        let _ = std::io::stdout().flush();
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => {
                println!();
                return 0;
            }
            Ok(_) => {}
        }
        let cmd = line.trim();
        if cmd.is_empty() || cmd.starts_with('#') {
            continue;
        }
        if cmd == "EOF" || cmd == "exit" || cmd == "quit" {
            return 0;
        }
        match client.run(cmd) {
            Ok(Ok(text)) | Ok(Err(text)) => print!("{text}"),
            Err(e) => {
                eprintln!("connection to the switch lost: {e}");
                return 1;
            }
        }
    }
}

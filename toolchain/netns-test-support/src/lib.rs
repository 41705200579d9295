//! Throwaway network namespaces and veth pairs for tests (and benches) that need real Linux
//! interfaces. Needs root: CAP_SYS_ADMIN for `setns`, CAP_NET_ADMIN for `ip netns`/`ip link`.
//!
//! Everything here panics on failure: it is test scaffolding, and a failed `ip` command must stop
//! the test with the command and its error, not be worked around.
//!
//! ```no_run
//! use netns_test_support::Netns;
//! let ns = Netns::new("demo");
//! ns.veth("va", "vb", None);
//! let shown = ns.command("ip").args(["link", "show", "va"]).status().unwrap();
//! assert!(shown.success());
//! let sockets_here = ns.run(|| { /* sockets opened here live in the namespace */ });
//! // the namespace and its veths are deleted when `ns` is dropped, panics included
//! ```

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

/// Runs `ip ARGS...`, panicking with the command line and its stderr if it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run ip {}: {e}", args.join(" ")));
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace of its own, deleted (with every interface in it) when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// A fresh namespace named `PREFIX-PID-N` (unique per process and call, so parallel tests
    /// and parallel test binaries never meet), with `lo` up and IPv6 off for interfaces created
    /// in it afterwards: autoconfiguration would put router solicitations and MLD reports on
    /// links whose every frame the tests count.
    pub fn new(prefix: &str) -> Netns {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "{prefix}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name]);
        let ns = Netns { name };
        let disable = "/proc/sys/net/ipv6/conf/default/disable_ipv6";
        let _ = ns
            .command("sh")
            .arg("-c")
            .arg(format!("[ -e {disable} ] && echo 1 > {disable}; true"))
            .status();
        ip(&["-n", &ns.name, "link", "set", "lo", "up"]);
        ns
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// A veth pair `a` <-> `b` inside this namespace, both up; `mtu` on both ends if given.
    pub fn veth(&self, a: &str, b: &str, mtu: Option<u32>) {
        let n = self.name.as_str();
        let mtu = mtu.map(|m| m.to_string());
        let mut args = vec!["-n", n, "link", "add", a];
        if let Some(m) = &mtu {
            args.extend(["mtu", m]);
        }
        args.extend(["type", "veth", "peer", "name", b]);
        if let Some(m) = &mtu {
            args.extend(["mtu", m]);
        }
        ip(&args);
        ip(&["-n", n, "link", "set", a, "up"]);
        ip(&["-n", n, "link", "set", b, "up"]);
    }

    /// `ip netns exec NAME PROGRAM`: a command that runs inside the namespace. `ip` execs the
    /// program in place, so the child's pid is the program's (signals reach it directly).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Runs `f` on a new thread that has entered the namespace (so the sockets it opens live
    /// there) and returns its result; a panic in `f` is re-raised here.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        match self.spawn(f).join() {
            Ok(v) => v,
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// As [`Netns::run`], without waiting: for work that goes on beside the test's own.
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> JoinHandle<T> {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let fd = File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
            // SAFETY: setns on a valid namespace descriptor; it affects the calling thread only.
            let rc = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
            f()
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// A veth pair with `a_dev` in namespace `a` and `b_dev` in `b`, both up.
pub fn veth_between(a: &Netns, a_dev: &str, b: &Netns, b_dev: &str) {
    ip(&[
        "link", "add", a_dev, "netns", &a.name, "type", "veth", "peer", "name", b_dev, "netns",
        &b.name,
    ]);
    ip(&["-n", &a.name, "link", "set", a_dev, "up"]);
    ip(&["-n", &b.name, "link", "set", b_dev, "up"]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the calling thread's namespace has interface `dev` (sysfs would show the mount's
    /// namespace, not the thread's).
    fn has(dev: &str) -> bool {
        let name = std::ffi::CString::new(dev).unwrap_or_default();
        // SAFETY: a valid NUL-terminated string.
        unsafe { libc::if_nametoindex(name.as_ptr()) != 0 }
    }

    /// `cat FILE` inside the namespace (`ip netns exec` mounts the namespace's own sysfs).
    fn cat(ns: &Netns, file: &str) -> String {
        let out = ns.command("cat").arg(file).output().expect("run cat");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    #[test]
    fn veths_live_in_the_namespace_and_go_with_it() {
        let ns = Netns::new("nts");
        ns.veth("ta", "tb", Some(2000));
        assert!(ns.run(|| has("ta") && has("tb") && has("lo")));
        assert!(!has("ta"), "not in the test's own namespace");
        assert_eq!(cat(&ns, "/sys/class/net/tb/mtu"), "2000");
        assert_eq!(
            cat(&ns, "/sys/class/net/ta/flags"),
            cat(&ns, "/sys/class/net/tb/flags")
        );
        assert_eq!(cat(&ns, "/proc/sys/net/ipv6/conf/ta/disable_ipv6"), "1");
        let path = format!("/var/run/netns/{}", ns.name());
        drop(ns);
        assert!(!std::path::Path::new(&path).exists(), "{path} remains");
    }

    #[test]
    fn veth_between_two_namespaces_and_a_panic_comes_back() {
        let (a, b) = (Netns::new("nts"), Netns::new("nts"));
        veth_between(&a, "xa", &b, "xb");
        assert!(a.run(|| has("xa") && !has("xb")));
        assert!(b.run(|| has("xb") && !has("xa")));
        // IFF_UP (0x1) set on both ends.
        let up = |ns: &Netns, dev: &str| {
            let flags = cat(ns, &format!("/sys/class/net/{dev}/flags"));
            u32::from_str_radix(flags.trim_start_matches("0x"), 16).unwrap_or(0) & 1 == 1
        };
        assert!(up(&a, "xa") && up(&b, "xb"));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.run(|| panic!("inside"));
        }));
        assert!(caught.is_err());
    }
}

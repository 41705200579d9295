//! A Linux interface as a switch port, through an `AF_PACKET` raw socket: what bmv2 does
//! through libpcap, and what Mininet's veths need.
//!
//! The socket sees every protocol (`ETH_P_ALL`), puts the interface in promiscuous mode, and
//! skips the copies of its own transmissions the kernel loops back (`PACKET_OUTGOING`). veths
//! strip VLAN tags into metadata (rx-vlan offload); the tag is put back into the frame from
//! `PACKET_AUXDATA`, as libpcap does, so a P4 parser sees the frame as it was on the wire.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::{Port, PortError, Recv};

const ETH_ALEN2: usize = 12;
const VLAN_TAG_LEN: usize = 4;
const ETH_P_8021Q: u16 = 0x8100;

/// What one `recvmsg` delivered before the VLAN tag is put back.
struct Raw {
    len: usize,
    pkttype: u8,
    /// (TPID, TCI) of a tag the kernel stripped.
    vlan: Option<(u16, u16)>,
}

/// poll(2)'s timeout for `timeout`, rounded up to whole milliseconds: `recv` passes what is
/// left of its deadline, always a little under what the caller asked, and rounding that down
/// made a 1 ms wait a 0 ms poll, so a caller waiting for frames in 1 ms steps spun on the CPU.
fn poll_ms(timeout: Duration) -> libc::c_int {
    timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int
}

/// An `AF_PACKET` socket bound to one interface.
pub struct AfPacketPort {
    name: String,
    fd: OwnedFd,
}

fn last_error(port: &str, op: &'static str) -> PortError {
    PortError::io(port, op, io::Error::last_os_error())
}

/// `setsockopt(2)` with a typed value (also used by flowgen's TX ring).
pub fn setsockopt<T>(
    fd: &OwnedFd,
    level: libc::c_int,
    opt: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` points to a live T of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl AfPacketPort {
    /// Opens `ifname` (needs CAP_NET_RAW). The interface must exist; it need not be up yet.
    pub fn open(ifname: &str) -> Result<Self, PortError> {
        let cname = CString::new(ifname).map_err(|_| {
            PortError::io(
                ifname,
                "interface name",
                io::Error::new(io::ErrorKind::InvalidInput, "contains a NUL byte"),
            )
        })?;
        // SAFETY: plain FFI call with a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(last_error(ifname, "look up interface"));
        }
        let protocol = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain FFI call; the result is checked before use.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::c_int::from(protocol),
            )
        };
        if raw < 0 {
            return Err(last_error(ifname, "open AF_PACKET socket"));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };

        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = protocol;
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a valid sockaddr_ll of the size passed.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(last_error(ifname, "bind to interface"));
        }

        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex as i32,
            mr_type: libc::PACKET_MR_PROMISC as u16,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
            .map_err(|e| PortError::io(ifname, "enable promiscuous mode", e))?;
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_AUXDATA,
            &1 as &libc::c_int,
        )
        .map_err(|e| PortError::io(ifname, "enable PACKET_AUXDATA", e))?;
        // Kernels before 4.20 lack this option; the PACKET_OUTGOING check in recv still drops
        // our own frames there, so its failure is not an error.
        let _ = setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &1 as &libc::c_int,
        );
        // Large socket buffers absorb bursts while the switch is busy with other ports.
        let bufsize: libc::c_int = 4 << 20;
        let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &bufsize);
        let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &bufsize);
        Ok(AfPacketPort {
            name: ifname.to_string(),
            fd,
        })
    }

    /// Waits until the socket is readable; false on timeout.
    fn wait_readable(&self, timeout: Duration) -> Result<bool, PortError> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = poll_ms(timeout);
        loop {
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc >= 0 {
                return Ok(rc > 0);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(PortError::io(&self.name, "poll", err));
            }
        }
    }

    /// One `recvmsg`, `None` if nothing was waiting after all.
    fn recv_one(&self, buf: &mut [u8]) -> Result<Option<Raw>, PortError> {
        // SAFETY: these are plain C structs; zero is a valid initial value for each.
        let mut from: libc::sockaddr_ll = unsafe { zeroed() };
        // u64 storage keeps the control buffer aligned for cmsghdr.
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 8]>() as _;
        // MSG_TRUNC makes the kernel report the real length of a frame longer than `buf`.
        // SAFETY: msg points at live buffers of the sizes it declares.
        let n = unsafe {
            libc::recvmsg(
                self.fd.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(PortError::io(&self.name, "recvmsg", err)),
            };
        }
        let mut vlan = None;
        // SAFETY: the CMSG_* walk stays within msg_control/msg_controllen set by the kernel.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_PACKET
                    && (*cmsg).cmsg_type == libc::PACKET_AUXDATA
                {
                    let aux: libc::tpacket_auxdata =
                        std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 {
                        let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                            aux.tp_vlan_tpid
                        } else {
                            ETH_P_8021Q
                        };
                        vlan = Some((tpid, aux.tp_vlan_tci));
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        Ok(Some(Raw {
            len: n as usize,
            pkttype: from.sll_pkttype,
            vlan,
        }))
    }
}

impl Port for AfPacketPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, frame: &[u8]) -> Result<(), PortError> {
        loop {
            // SAFETY: `frame` is a live slice of the length passed.
            let n =
                unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if n >= 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(PortError::io(&self.name, "send", err));
            }
        }
    }

    fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Recv, PortError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            // Read first and poll only when nothing is waiting: under load that is one system
            // call per frame instead of two.
            let Some(Raw { len, pkttype, vlan }) = self.recv_one(buf)? else {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() || !self.wait_readable(left)? {
                    return Ok(Recv::Timeout);
                }
                continue;
            };
            if pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let total = len + if vlan.is_some() { VLAN_TAG_LEN } else { 0 };
            if total > buf.len() {
                return Err(PortError::Truncated {
                    port: self.name.clone(),
                    len: total,
                    capacity: buf.len(),
                });
            }
            if let Some((tpid, tci)) = vlan {
                if len < ETH_ALEN2 {
                    // A runt cannot carry a tag; hand it over as it came.
                    return Ok(Recv::Frame(len));
                }
                buf.copy_within(ETH_ALEN2..len, ETH_ALEN2 + VLAN_TAG_LEN);
                buf[ETH_ALEN2..ETH_ALEN2 + 2].copy_from_slice(&tpid.to_be_bytes());
                buf[ETH_ALEN2 + 2..ETH_ALEN2 + 4].copy_from_slice(&tci.to_be_bytes());
            }
            return Ok(Recv::Frame(total));
        }
    }

    fn readable_fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.fd.as_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_timeout_is_never_shorter_than_asked() {
        assert_eq!(poll_ms(Duration::ZERO), 0);
        assert_eq!(poll_ms(Duration::from_nanos(1)), 1);
        assert_eq!(poll_ms(Duration::from_nanos(999_999)), 1);
        assert_eq!(poll_ms(Duration::from_millis(1)), 1);
        assert_eq!(poll_ms(Duration::from_micros(1_001)), 2);
        assert_eq!(poll_ms(Duration::from_secs(u64::MAX)), i32::MAX);
    }
}

//! Sending through an `AF_PACKET` transmit ring (`PACKET_MMAP`, `PACKET_TX_RING`, TPACKET_V2):
//! frames are copied into slots of a ring shared with the kernel, and one `send()` hands the
//! kernel every slot filled since the last one, instead of one system call per frame.
//!
//! Each slot starts with a `tpacket2_hdr` whose `tp_status` says who owns it: AVAILABLE (ours to
//! fill), SEND_REQUEST (filled, waiting for the kernel), SENDING (the kernel has it). We fill
//! slots in ring order and publish each with a release store of SEND_REQUEST; the kernel walks
//! the ring from where it stopped and gives each slot back (AVAILABLE) once the frame's buffer
//! is freed. The socket binds with protocol 0, so it never receives: a generator has no use
//! for copies of the interface's incoming traffic.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use switch_ports::setsockopt;

use crate::error::Error;

/// Where a frame starts in its slot when the socket does not ask for `PACKET_TX_HAS_OFF`:
/// right after the aligned header (`TPACKET2_HDRLEN - sizeof(sockaddr_ll)` in the kernel).
const DATA_OFFSET: usize = (size_of::<libc::tpacket2_hdr>() + libc::TPACKET_ALIGNMENT - 1)
    & !(libc::TPACKET_ALIGNMENT - 1);

/// Slots handed to the kernel per `send()` while filling: large enough that the system call
/// is amortised, small enough that the kernel starts on a burst before the ring is full.
const KICK_BATCH: u32 = 256;

/// Bytes of Ethernet framing beyond the MTU a slot must hold (header and one VLAN tag).
const L2_OVERHEAD: usize = 18;

/// The MTU of `iface`, asked through the socket (sysfs may belong to another namespace).
fn mtu(fd: &OwnedFd, iface: &str) -> io::Result<usize> {
    // SAFETY: ifreq is plain data; all-zero is valid.
    let mut req: libc::ifreq = unsafe { zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(iface.bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the name and writes ifru_mtu of the ifreq we own.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU as _, &mut req) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the ioctl succeeded, so the union holds the MTU.
    Ok(unsafe { req.ifr_ifru.ifru_mtu }.max(0) as usize)
}

/// A transmit ring bound to one interface.
pub struct TxRing {
    iface: String,
    fd: OwnedFd,
    map: NonNull<u8>,
    map_len: usize,
    slot_size: usize,
    slots: u32,
    /// The next slot to fill.
    head: u32,
    /// Slots filled since the last `send()`.
    unkicked: u32,
    /// Frames the kernel reported dropped when it took them from the ring.
    dropped: u64,
}

// SAFETY: the mapping is owned by this value alone; the kernel's side is synchronised through
// the slots' status words.
unsafe impl Send for TxRing {}

impl Drop for TxRing {
    fn drop(&mut self) {
        // Frames still in the ring go out (and the kernel lets go of their pages) before the
        // mapping disappears.
        if self.unkicked > 0 {
            let _ = self.kick(true);
        }
        // SAFETY: unmaps exactly the region mmap returned; nothing refers to it afterwards.
        unsafe { libc::munmap(self.map.as_ptr().cast(), self.map_len) };
    }
}

impl TxRing {
    /// Opens a ring of at least `slots` frame slots (rounded up to fill whole blocks) on `iface`.
    /// Fails with one line naming the interface and the step.
    pub fn open(iface: &str, slots: u32) -> Result<Self, Error> {
        let cname = CString::new(iface)
            .map_err(|_| Error::unusable(iface, "interface name contains NUL"))?;
        // SAFETY: plain FFI call with a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(Error::os(
                iface,
                "look up interface",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: plain FFI call; the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(Error::os(
                iface,
                "open AF_PACKET socket",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
            .map_err(|e| Error::os(iface, "PACKET_VERSION TPACKET_V2", e))?;
        // A malformed frame is skipped (and its slot given back) instead of stalling the ring.
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_LOSS, &1 as &libc::c_int)
            .map_err(|e| Error::os(iface, "PACKET_LOSS", e))?;

        let frame_max = mtu(&fd, iface).map_err(|e| Error::os(iface, "read MTU", e))? + L2_OVERHEAD;
        let slot_size = (DATA_OFFSET + frame_max).next_power_of_two().max(2048);
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let block_size = slot_size.max(64 << 10).max(page);
        let per_block = block_size / slot_size;
        let blocks = (slots.max(1) as usize).div_ceil(per_block);
        let total = blocks
            .checked_mul(block_size)
            .filter(|&t| u32::try_from(t / slot_size).is_ok())
            .ok_or_else(|| {
                Error::unusable(iface, format!("a TX ring of {slots} slots is too large"))
            })?;
        let req = libc::tpacket_req {
            tp_block_size: block_size as libc::c_uint,
            tp_block_nr: blocks as libc::c_uint,
            tp_frame_size: slot_size as libc::c_uint,
            tp_frame_nr: (total / slot_size) as libc::c_uint,
        };
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &req)
            .map_err(|e| Error::os(iface, format!("PACKET_TX_RING of {total} bytes"), e))?;
        // SAFETY: maps the ring the kernel just allocated for this socket; checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(Error::os(iface, "mmap TX ring", io::Error::last_os_error()));
        }
        let map = NonNull::new(map.cast::<u8>())
            .ok_or_else(|| Error::unusable(iface, "mmap TX ring returned null"))?;
        let ring = TxRing {
            iface: iface.to_string(),
            fd,
            map,
            map_len: total,
            slot_size,
            slots: (total / slot_size) as u32,
            head: 0,
            unkicked: 0,
            dropped: 0,
        };
        // SAFETY: sockaddr_ll is plain data; all-zero is valid. Bound after the ring is set up
        // (the kernel refuses ring changes on a bound, running socket).
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a valid sockaddr_ll of the size passed.
        let rc = unsafe {
            libc::bind(
                ring.fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(Error::os(
                iface,
                "bind to interface",
                io::Error::last_os_error(),
            ));
        }
        Ok(ring)
    }

    /// Frame slots in the ring.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Frames the kernel dropped after taking them from the ring (queue or device full).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn status(&self, slot: u32) -> &AtomicU32 {
        let off = slot as usize * self.slot_size;
        debug_assert!(off + self.slot_size <= self.map_len);
        // SAFETY: the slot lies inside the mapping, starts 16-byte aligned with the u32
        // tp_status, and the kernel only ever accesses that word atomically in effect.
        unsafe { AtomicU32::from_ptr(self.map.as_ptr().add(off).cast::<u32>()) }
    }

    /// Hands filled slots to the kernel. `wait`: also wait until it has taken all of them.
    fn kick(&mut self, wait: bool) -> Result<(), Error> {
        self.unkicked = 0;
        let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
        loop {
            // SAFETY: a send with no data; the kernel takes its frames from the ring.
            let rc = unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, flags) };
            if rc >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // The kernel stops at a frame the queue could not take: that frame is lost,
                // the rest stay in the ring for the next send.
                Some(libc::ENOBUFS) => {
                    self.dropped += 1;
                    return Ok(());
                }
                Some(libc::EAGAIN) => return Ok(()),
                _ => return Err(Error::os(&*self.iface, "send from TX ring", e)),
            }
        }
    }

    /// Queues `frame`; `Ok(false)` when the ring stayed full even after waiting for the kernel.
    pub fn send(&mut self, frame: &[u8]) -> Result<bool, Error> {
        if DATA_OFFSET + frame.len() > self.slot_size {
            return Err(Error::unusable(
                &self.iface,
                format!(
                    "send: frame of {} bytes does not fit the interface's MTU",
                    frame.len()
                ),
            ));
        }
        let slot = self.head;
        if self.status(slot).load(Ordering::Acquire) != libc::TP_STATUS_AVAILABLE {
            self.kick(true)?;
            if self.status(slot).load(Ordering::Acquire) != libc::TP_STATUS_AVAILABLE {
                return Ok(false);
            }
        }
        let base = slot as usize * self.slot_size;
        // SAFETY: the slot is ours (AVAILABLE) until we publish it; the frame fits after the
        // header (checked above) and the header is a tpacket2_hdr at the slot's start.
        unsafe {
            let p = self.map.as_ptr().add(base);
            std::ptr::copy_nonoverlapping(frame.as_ptr(), p.add(DATA_OFFSET), frame.len());
            (*p.cast::<libc::tpacket2_hdr>()).tp_len = frame.len() as u32;
        }
        self.status(slot)
            .store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.head = if slot + 1 == self.slots { 0 } else { slot + 1 };
        self.unkicked += 1;
        if self.unkicked >= KICK_BATCH {
            self.kick(false)?;
        }
        Ok(true)
    }

    /// Hands every queued frame to the kernel without waiting for the wire.
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.unkicked > 0 {
            self.kick(false)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_start_where_the_kernel_reads_them() {
        // TPACKET2_HDRLEN - sizeof(struct sockaddr_ll) for a 32-byte tpacket2_hdr.
        assert_eq!(
            DATA_OFFSET,
            libc::TPACKET2_HDRLEN - size_of::<libc::sockaddr_ll>()
        );
        assert_eq!(DATA_OFFSET, 32);
    }

    #[test]
    fn a_missing_interface_is_one_line() {
        let e = TxRing::open("nosuch-fg0", 64)
            .err()
            .expect("no such interface");
        assert!(
            matches!(&e, Error::Os { at, .. } if at == "nosuch-fg0"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.starts_with("nosuch-fg0: look up interface: "), "{e}");
        assert!(!e.contains('\n'));
    }
}

//! flowgen: a stateful many-flow traffic generator (seed 004, issue 11).
//!
//! A [`profile::Profile`] (TRex-style YAML) gives address ranges and flow templates
//! ([`template::Template`]); the [`gen::Generator`] starts flows at each template's rate and
//! fires every flow's packets through a [`sched::Scheduler`] (a hierarchical [`sched::TimerWheel`]
//! or the [`sched::HeapScheduler`] baseline) into a [`gen::Sink`]: Linux interfaces, a pcap file
//! or the in-process null sink; interfaces send through [`ring::TxRing`]s. [`run`] drives it and reports; [`bench`] is seed 004's sweep.

pub mod bench;
mod error;
pub mod gen;
pub mod profile;
pub mod ring;
pub mod run;
pub mod sched;
pub mod template;

pub use error::{Error, FrameError};

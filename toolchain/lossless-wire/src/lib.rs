//! Wire formats that several parts of lossless-lab produce or consume. One definition each, so the
//! switch, the hosts and the tests cannot disagree about a byte.

pub mod inet;
pub mod pfc;
pub mod rocev2;
pub mod tcp;

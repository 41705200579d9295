//! Action data between its control-plane form (big-endian bytes per parameter, checked
//! against the action's parameter widths) and the engine's (`state::ActionData`).

use crate::error::{fail, ApiError, ErrorCode};
use num_bigint::BigInt;
use switch_engine::expr::Arg;
use switch_engine::program::Prog;
use switch_engine::state::ActionData;
use switch_engine::value::big_to_bytes;

/// Converts control-plane action data (big-endian bytes per parameter) to engine form.
pub fn action_data(prog: &Prog, action: u32, args: &[Vec<u8>]) -> Result<ActionData, ApiError> {
    let a = &prog.actions[action as usize];
    if args.len() != a.params.len() {
        return fail(
            ErrorCode::BadActionData,
            format!(
                "action \"{}\" takes {} parameters, got {}",
                a.name,
                a.params.len(),
                args.len()
            ),
        );
    }
    let mut out = Vec::with_capacity(args.len());
    for ((name, width), bytes) in a.params.iter().zip(args) {
        let too_wide = || {
            fail(
                ErrorCode::BadActionData,
                format!(
                    "parameter \"{name}\" of action \"{}\": value does not fit {width} bits",
                    a.name
                ),
            )
        };
        out.push(if *width <= 64 {
            // Without a big integer: this runs for every parameter of every table write.
            let sig = &bytes[bytes.iter().take_while(|b| **b == 0).count()..];
            if sig.len() > 8 {
                return too_wide();
            }
            let v = sig.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
            if 64 - v.leading_zeros() > *width {
                return too_wide();
            }
            Arg::N(v)
        } else {
            let v = BigInt::from_bytes_be(num_bigint::Sign::Plus, bytes);
            if v.bits() > u64::from(*width) {
                return too_wide();
            }
            Arg::W(v)
        });
    }
    Ok(ActionData {
        action,
        args: out.into_boxed_slice(),
    })
}

pub fn to_bytes(a: &Arg, width: u32) -> Vec<u8> {
    let n = width.div_ceil(8) as usize;
    match a {
        Arg::N(v) => v.to_be_bytes()[8usize.saturating_sub(n)..].to_vec(),
        Arg::W(b) => {
            let mut out = vec![0u8; n];
            big_to_bytes(b, &mut out);
            out
        }
    }
}

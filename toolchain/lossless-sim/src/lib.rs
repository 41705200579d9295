//! lossless-sim: the lab's fabric in virtual time. The switches are p4-switch's [`Core`]
//! (switch-engine running the BMv2 JSON through the v1model target, switch-v1model, switch-tm's queues, buffer, PFC and watchdog),
//! programmed by lossless-ctl over P4Runtime from the same config_db.json files the lab loads;
//! links have a rate and a propagation delay; one event queue orders everything in
//! nanoseconds. README.md: what is real code, what is modelled, what is missing.
//!
//! [`Core`]: p4_switch::core::Core

pub mod dctcp;
pub mod des;
pub mod error;
pub mod experiment;
pub mod fabric;
pub mod fieldtest;
pub mod leafspine;
pub mod link;
pub mod net;
pub mod pcap;
pub mod plots;
pub mod probe;
pub mod program;
pub mod results;
pub mod sweep;
pub mod tally;
pub mod tcp;
pub mod timeline;
pub mod traffic;

use fabric::{parse_mac, Fabric};
use link::LinkSpec;
use net::{Node, Sim, SimHost, SimSwitch};
use program::Programmed;

/// Nanoseconds a frame spends in a switch's pipeline before the traffic manager, unless given.
pub const DEFAULT_PIPELINE_NS: u64 = 500;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("fabric: links[{link}]: {what}")]
    Link { link: usize, what: String },
    #[error("fabric: switch {0} was not programmed")]
    Unprogrammed(String),
}

/// The simulated network of `fabric` with its programmed switches, at virtual time 0.
pub fn assemble(
    fabric: &Fabric,
    switches: Vec<Programmed>,
    pipeline_ns: u64,
) -> Result<Sim, BuildError> {
    let mut sim = Sim::default();
    let mut programmed: Vec<Option<Programmed>> = switches.into_iter().map(Some).collect();
    for spec in &fabric.switches {
        let p = programmed
            .iter_mut()
            .find(|p| p.as_ref().is_some_and(|p| p.name == spec.name))
            .and_then(Option::take)
            .ok_or_else(|| BuildError::Unprogrammed(spec.name.clone()))?;
        sim.switches
            .push(SimSwitch::new(p.name, p.core, p.ports, pipeline_ns));
    }
    for h in &fabric.hosts {
        // Fabric::load checked every MAC.
        let mac = parse_mac(&h.mac).unwrap_or_default();
        let gw = parse_mac(&h.gateway_mac).unwrap_or_default();
        let mut host = SimHost::new(h.name.clone(), h.ip, mac, gw);
        host.latency_ns = fabric.host_latency_ns.get(&h.name).copied().unwrap_or(0);
        sim.hosts.push(host);
    }
    for (i, l) in fabric.links.iter().enumerate() {
        let end = |e: &fabric::End| -> Result<(Node, u32), BuildError> {
            if let Some(s) = sim.switch_index(&e.node) {
                return Ok((Node::Switch(s), e.port));
            }
            sim.host_index(&e.node)
                .map(|h| (Node::Host(h), 0))
                .ok_or_else(|| BuildError::Link {
                    link: i,
                    what: format!("unknown node '{}'", e.node),
                })
        };
        let (a, b) = (end(&l.a)?, end(&l.b)?);
        let link = LinkSpec {
            rate_bps: l.rate_mbps * 1_000_000,
            delay_ns: l.delay_ns,
        };
        sim.connect(a, b, link);
    }
    sim.start_pktgens();
    Ok(sim)
}

//! Shared by the tests and the bench: an in-process data plane over a real `switch_v1model::Switch`
//! behind a Mutex, a P4Info derived from the engine's own table description, and a client that
//! has won arbitration.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use p4runtime_proto::p4info::{self, match_field, P4Info, Preamble};
use p4runtime_proto::p4runtime::{
    stream_message_request, stream_message_response, ForwardingPipelineConfig,
    MasterArbitrationUpdate, SetForwardingPipelineConfigRequest, StreamMessageRequest,
    StreamMessageResponse, Uint128,
};
use p4runtime_proto::P4RuntimeClient;
use p4runtime_server::Dataplane;
use switch_v1model::{Output, Switch, SwitchConfig};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

pub const CPU_PORT: u32 = 64;
pub const DEVICE: u64 = 1;

type Sink = Box<dyn Fn(Vec<u8>) + Send + Sync>;

#[derive(Default)]
pub struct TestDp {
    pub sw: Mutex<Option<Switch>>,
    sink: Mutex<Option<Sink>>,
    /// Frames sent to ports other than the CPU port.
    pub sent: Mutex<Vec<Output>>,
}

impl Dataplane for TestDp {
    fn exec(&self, f: Box<dyn FnOnce(&mut Option<Switch>) + Send>) {
        f(&mut self.sw.lock().unwrap());
    }
    fn set_cpu_sink(&self, sink: Sink) {
        *self.sink.lock().unwrap() = Some(sink);
    }
    fn inject_cpu(&self, frame: Vec<u8>) {
        let mut out = Vec::new();
        if let Some(sw) = self.sw.lock().unwrap().as_mut() {
            sw.process(CPU_PORT, &frame, 0, &mut out);
        }
        for o in out {
            if o.port == CPU_PORT {
                if let Some(s) = self.sink.lock().unwrap().as_ref() {
                    s(o.data);
                }
            } else {
                self.sent.lock().unwrap().push(o);
            }
        }
    }
    fn engine_config(&self) -> SwitchConfig {
        // Not the engine's defaults, so a pipeline set over P4Runtime shows whether it got them.
        SwitchConfig {
            cpu_port: Some(CPU_PORT),
            priority_queues: 8,
            drop_port: 500,
            ..SwitchConfig::default()
        }
    }
    fn device_id(&self) -> u64 {
        DEVICE
    }
}

pub fn stf_json(name: &str) -> String {
    let path = format!(
        "{}/../switch-v1model/tests/stf/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A P4Info for `json` computed from the engine's description of its tables: ids with p4c's
/// prefixes (table 0x02, action 0x01), match fields and params numbered from 1 in JSON order.
pub fn p4info_for(json: &str) -> P4Info {
    let sw = Switch::from_json(json, SwitchConfig::default()).unwrap();
    let mut info = P4Info::default();
    let mut action_names: Vec<(String, Vec<(String, u32)>)> = Vec::new();
    for t in sw.tables() {
        for a in &t.actions {
            if !action_names.iter().any(|(n, _)| *n == a.name) {
                action_names.push((a.name.clone(), a.params.clone()));
            }
        }
    }
    let action_id = |name: &str| {
        0x0100_0000 + 1 + action_names.iter().position(|(n, _)| n == name).unwrap() as u32
    };
    for (name, params) in &action_names {
        info.actions.push(p4info::Action {
            preamble: Some(preamble(action_id(name), name)),
            params: params
                .iter()
                .enumerate()
                .map(|(i, (n, w))| p4info::action::Param {
                    id: i as u32 + 1,
                    name: n.clone(),
                    bitwidth: *w as i32,
                    ..Default::default()
                })
                .collect(),
        });
    }
    for (i, t) in sw.tables().iter().enumerate() {
        let json_table =
            &serde_json::from_str::<serde_json::Value>(json).unwrap()["pipelines"][0]["tables"];
        let is_const = json_table
            .as_array()
            .unwrap()
            .iter()
            .any(|jt| jt["name"] == t.name.as_str() && jt.get("entries").is_some());
        info.tables.push(p4info::Table {
            preamble: Some(preamble(0x0200_0000 + 1 + i as u32, &t.name)),
            match_fields: t
                .keys
                .iter()
                .enumerate()
                .map(|(k, key)| p4info::MatchField {
                    id: k as u32 + 1,
                    name: key.name.clone(),
                    bitwidth: key.width as i32,
                    r#match: Some(match_field::Match::MatchType(match key.match_type {
                        p4_bmv2_json::MatchType::Exact | p4_bmv2_json::MatchType::Valid => 2,
                        p4_bmv2_json::MatchType::Lpm => 3,
                        p4_bmv2_json::MatchType::Ternary => 4,
                        p4_bmv2_json::MatchType::Range => 5,
                        p4_bmv2_json::MatchType::Optional => 6,
                    })),
                    ..Default::default()
                })
                .collect(),
            action_refs: t
                .actions
                .iter()
                .map(|a| p4info::ActionRef {
                    id: action_id(&a.name),
                    ..Default::default()
                })
                .collect(),
            size: t.max_size as i64,
            is_const_table: is_const,
            ..Default::default()
        });
    }
    // Indexed counters (0x12) and registers (0x16) from the JSON's arrays.
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    let arrays = |key: &str| doc[key].as_array().cloned().unwrap_or_default();
    for (i, c) in arrays("counter_arrays")
        .iter()
        .filter(|c| c["is_direct"] == false)
        .enumerate()
    {
        info.counters.push(p4info::Counter {
            preamble: Some(preamble(
                0x1200_0001 + i as u32,
                c["name"].as_str().unwrap(),
            )),
            size: c["size"].as_i64().unwrap(),
            ..Default::default()
        });
    }
    // Direct counters (0x13), attached to their JSON table.
    for (i, c) in arrays("counter_arrays")
        .iter()
        .filter(|c| c["is_direct"] == true)
        .enumerate()
    {
        let id = 0x1300_0001 + i as u32;
        let table = c["binding"].as_str().unwrap();
        let t = info
            .tables
            .iter_mut()
            .find(|t| t.preamble.as_ref().unwrap().name == table)
            .unwrap();
        t.direct_resource_ids.push(id);
        let direct_table_id = t.preamble.as_ref().unwrap().id;
        info.direct_counters.push(p4info::DirectCounter {
            preamble: Some(preamble(id, c["name"].as_str().unwrap())),
            direct_table_id,
            ..Default::default()
        });
    }
    for (i, m) in arrays("meter_arrays")
        .iter()
        .filter(|m| m["is_direct"] == false)
        .enumerate()
    {
        info.meters.push(p4info::Meter {
            preamble: Some(preamble(
                0x1400_0001 + i as u32,
                m["name"].as_str().unwrap(),
            )),
            size: m["size"].as_i64().unwrap(),
            ..Default::default()
        });
    }
    for (i, r) in arrays("register_arrays").iter().enumerate() {
        info.registers.push(p4info::Register {
            preamble: Some(preamble(
                0x1600_0001 + i as u32,
                r["name"].as_str().unwrap(),
            )),
            size: r["size"].as_i64().unwrap() as i32,
            ..Default::default()
        });
    }
    info
}

fn preamble(id: u32, name: &str) -> Preamble {
    Preamble {
        id,
        name: name.into(),
        alias: name.rsplit('.').next().unwrap_or(name).into(),
        ..Default::default()
    }
}

pub fn table_id(info: &P4Info, name: &str) -> u32 {
    info.tables
        .iter()
        .find(|t| t.preamble.as_ref().unwrap().name == name)
        .unwrap()
        .preamble
        .as_ref()
        .unwrap()
        .id
}

pub fn action_id(info: &P4Info, name: &str) -> u32 {
    info.actions
        .iter()
        .find(|t| t.preamble.as_ref().unwrap().name == name)
        .unwrap()
        .preamble
        .as_ref()
        .unwrap()
        .id
}

pub async fn start() -> (SocketAddr, Arc<TestDp>) {
    let dp = Arc::new(TestDp::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let d: Arc<dyn Dataplane> = dp.clone();
    tokio::spawn(p4runtime_server::serve_listener(
        listener,
        d,
        std::future::pending(),
    ));
    (addr, dp)
}

pub struct Controller {
    pub client: P4RuntimeClient<Channel>,
    pub tx: mpsc::Sender<StreamMessageRequest>,
    pub rx: tonic::Streaming<StreamMessageResponse>,
    pub election_id: u64,
}

pub fn eid(v: u64) -> Option<Uint128> {
    Some(Uint128 { high: 0, low: v })
}

impl Controller {
    /// Connects and sends a MasterArbitrationUpdate; returns with the first reply's status code.
    pub async fn connect(addr: SocketAddr, election_id: u64) -> (Controller, i32) {
        Controller::connect_role(addr, election_id, "").await
    }

    /// [`Controller::connect`] in a named role ("" = the default role).
    pub async fn connect_role(addr: SocketAddr, election_id: u64, role: &str) -> (Controller, i32) {
        Controller::connect_config(addr, election_id, role, None).await
    }

    /// [`Controller::connect_role`] with a role config.
    pub async fn connect_config(
        addr: SocketAddr,
        election_id: u64,
        role: &str,
        config: Option<prost_types::Any>,
    ) -> (Controller, i32) {
        let mut client = P4RuntimeClient::connect(format!("http://{addr}"))
            .await
            .unwrap()
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20);
        let (tx, rx) = mpsc::channel(64);
        let resp = client
            .stream_channel(ReceiverStream::new(rx))
            .await
            .unwrap();
        let mut c = Controller {
            client,
            tx,
            rx: resp.into_inner(),
            election_id,
        };
        c.arbitrate(role, config).await;
        let code = c.next_arbitration().await;
        (c, code)
    }

    /// Sends a MasterArbitrationUpdate with this controller's election id.
    pub async fn arbitrate(&mut self, role: &str, config: Option<prost_types::Any>) {
        self.tx
            .send(StreamMessageRequest {
                update: Some(stream_message_request::Update::Arbitration(
                    MasterArbitrationUpdate {
                        device_id: DEVICE,
                        election_id: eid(self.election_id),
                        role: (!role.is_empty() || config.is_some()).then(|| {
                            p4runtime_proto::p4runtime::Role {
                                name: role.into(),
                                config,
                                ..Default::default()
                            }
                        }),
                        ..Default::default()
                    },
                )),
            })
            .await
            .unwrap();
    }

    pub async fn next_arbitration(&mut self) -> i32 {
        loop {
            let m = self.rx.message().await.unwrap().unwrap();
            if let Some(stream_message_response::Update::Arbitration(a)) = m.update {
                return a.status.unwrap().code;
            }
        }
    }

    pub async fn set_pipeline(&mut self, info: &P4Info, json: &str) -> Result<(), tonic::Status> {
        self.client
            .set_forwarding_pipeline_config(SetForwardingPipelineConfigRequest {
                device_id: DEVICE,
                election_id: eid(self.election_id),
                action: 3,
                config: Some(ForwardingPipelineConfig {
                    p4info: Some(info.clone()),
                    p4_device_config: json.as_bytes().to_vec(),
                    cookie: Some(
                        p4runtime_proto::p4runtime::forwarding_pipeline_config::Cookie {
                            cookie: 42,
                        },
                    ),
                }),
                ..Default::default()
            })
            .await
            .map(|_| ())
    }
}

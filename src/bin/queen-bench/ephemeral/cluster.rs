//! The brokers of a run this tool starts: node `a` on a fresh embedded PostgreSQL, and
//! later node `b`, a separate process on the same database, the two meshed with each
//! other. Stopped in reverse order (`a` stops the PostgreSQL).

use std::time::{Duration, Instant};

use anyhow::bail;

use super::client::Client;
use crate::launch::LaunchArgs;
use crate::spawn::{free_port, SpawnedBroker};

/// The node ids, as the owner hashing sees them.
pub const NODES: [&str; 2] = ["a", "b"];

/// Node `a`, and `b` once started.
pub struct Cluster {
    launch: LaunchArgs,
    cap: u64,
    mesh_ports: [u16; 2],
    /// Node `a`.
    pub a: SpawnedBroker,
    /// Node `b`, once [`Cluster::start_b`] ran.
    pub b: Option<SpawnedBroker>,
}

fn env(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

impl Cluster {
    /// Starts node `a` with an ephemeral cap of `cap` bytes, its peer `b` not there yet.
    pub async fn start_a(launch: &LaunchArgs, cap: u64) -> anyhow::Result<Self> {
        let mesh_ports = [free_port()?, free_port()?];
        let a = launch
            .start(&env(&[
                ("QUEEN_NODE_ID", "a".to_owned()),
                ("QUEEN_MESH_PORT", mesh_ports[0].to_string()),
                ("QUEEN_PEERS", format!("127.0.0.1:{}", mesh_ports[1])),
                ("QUEEN_EPHEMERAL_MAX_BYTES", cap.to_string()),
            ]))
            .await?;
        Ok(Self {
            launch: launch.clone(),
            cap,
            mesh_ports,
            a,
            b: None,
        })
    }

    /// Starts node `b` on `a`'s database and waits until each sees the other on the mesh.
    pub async fn start_b(&mut self) -> anyhow::Result<&SpawnedBroker> {
        let b = self
            .launch
            .start(&env(&[
                ("QUEEN_NODE_ID", "b".to_owned()),
                ("QUEEN_MESH_PORT", self.mesh_ports[1].to_string()),
                ("QUEEN_PEERS", format!("127.0.0.1:{}", self.mesh_ports[0])),
                ("QUEEN_EPHEMERAL_MAX_BYTES", self.cap.to_string()),
                ("DATABASE_URL", self.a.database_url.clone()),
            ]))
            .await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        for url in [&self.a.url, &b.url] {
            let client = Client::new(url)?;
            loop {
                let metrics = client.metrics().await?;
                if metrics["mesh"]["peersConnected"].as_u64().unwrap_or(0) >= 1 {
                    break;
                }
                if Instant::now() > deadline {
                    bail!("the two brokers did not connect over the mesh in 30 s");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(self.b.insert(b))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // `b` first: `a`'s stop takes the PostgreSQL down.
        if let Some(mut b) = self.b.take() {
            b.stop();
        }
        self.a.stop();
    }
}

/// The first queue `{prefix}-{i}` that `node` owns among [`NODES`].
pub fn queue_owned_by(node: &str, prefix: &str) -> String {
    let members: Vec<String> = NODES.iter().map(|n| (*n).to_owned()).collect();
    (0..)
        .map(|i| format!("{prefix}-{i}"))
        .find(|q| queen::ephemeral::owner::owner(&members, "", q) == Some(node))
        .unwrap_or_else(|| format!("{prefix}-0"))
}

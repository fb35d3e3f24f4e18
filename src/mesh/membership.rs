//! Who the peers are: the static list (`QUEEN_PEERS`) and the DNS name (`QUEEN_PEER_DNS`,
//! a Kubernetes headless service), resolved again on every refresh so that scaling up and
//! down is followed. Each resolved address gets a peer task; an address that disappears
//! loses its task.
//!
//! A failed lookup removes nobody: a DNS hiccup must not cut the mesh. This node's own
//! address may well be in the answer; the handshake tells (see [`super::peer`]).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use tracing::{info, warn};

use super::peer::PeerHandle;
use super::Shared;
use crate::config::PeerAddress;

/// Keeps the peer tasks in step with the resolved addresses until aborted.
pub(crate) async fn run(shared: Arc<Shared>) {
    let config = &shared.config;
    let mut sources: Vec<PeerAddress> = config.peers.clone();
    sources.extend(config.peer_dns.clone());
    if sources.is_empty() {
        return;
    }
    let mut tick = tokio::time::interval(config.dns_refresh);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing: HashSet<String> = HashSet::new();
    loop {
        tick.tick().await;
        let (found, complete) = resolve(&sources, &mut failing).await;
        apply(&shared, found, complete);
    }
}

/// Every address the sources name now; `complete` is false when a lookup failed.
async fn resolve(
    sources: &[PeerAddress],
    failing: &mut HashSet<String>,
) -> (HashSet<SocketAddr>, bool) {
    let mut found = HashSet::new();
    let mut complete = true;
    for source in sources {
        let name = source.to_string();
        match tokio::net::lookup_host((source.host.as_str(), source.port)).await {
            Ok(addrs) => {
                found.extend(addrs);
                if failing.remove(&name) {
                    info!(peer = %name, "mesh peer name resolves again");
                }
            }
            Err(error) => {
                complete = false;
                // Warn on the change, not on every refresh of a name that stays broken.
                if failing.insert(name.clone()) {
                    warn!(peer = %name, error = %error, "mesh peer name does not resolve");
                }
            }
        }
    }
    (found, complete)
}

fn apply(shared: &Arc<Shared>, mut found: HashSet<SocketAddr>, complete: bool) {
    found.remove(&shared.config.bind);
    let mut peers = shared.peers.lock().expect("mesh lock");
    if complete {
        let gone: Vec<SocketAddr> = peers
            .keys()
            .filter(|addr| !found.contains(addr))
            .copied()
            .collect();
        for addr in gone {
            if let Some(peer) = peers.remove(&addr) {
                info!(peer = %addr, "mesh peer removed");
                peer.stop();
            }
        }
    }
    for addr in found {
        peers.entry(addr).or_insert_with(|| {
            info!(peer = %addr, "mesh peer added");
            PeerHandle::start(shared.clone(), addr)
        });
    }
}

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
    let current: HashSet<SocketAddr> = peers.keys().copied().collect();
    let (added, removed) = changes(&current, &found, complete);
    for addr in removed {
        if let Some(peer) = peers.remove(&addr) {
            info!(peer = %addr, "mesh peer removed");
            peer.stop();
        }
    }
    for addr in added {
        info!(peer = %addr, "mesh peer added");
        peers.insert(addr, PeerHandle::start(shared.clone(), addr));
    }
}

/// Which peers to start and which to stop, going from `current` to `found`. An
/// incomplete lookup only adds: a name that failed to resolve keeps its peers.
fn changes(
    current: &HashSet<SocketAddr>,
    found: &HashSet<SocketAddr>,
    complete: bool,
) -> (Vec<SocketAddr>, Vec<SocketAddr>) {
    let added = found.difference(current).copied().collect();
    let removed = if complete {
        current.difference(found).copied().collect()
    } else {
        Vec::new()
    };
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ports: &[u16]) -> HashSet<SocketAddr> {
        ports
            .iter()
            .map(|p| SocketAddr::from(([10, 0, 0, 1], *p)))
            .collect()
    }

    #[test]
    fn scaling_up_adds_and_scaling_down_removes_peers() {
        let (added, removed) = changes(&set(&[1, 2]), &set(&[1, 2, 3, 4]), true);
        assert_eq!(added.into_iter().collect::<HashSet<_>>(), set(&[3, 4]));
        assert!(removed.is_empty());
        let (added, removed) = changes(&set(&[1, 2, 3]), &set(&[1]), true);
        assert!(added.is_empty());
        assert_eq!(removed.into_iter().collect::<HashSet<_>>(), set(&[2, 3]));
    }

    #[test]
    fn a_failed_lookup_removes_nobody() {
        let (added, removed) = changes(&set(&[1, 2, 3]), &set(&[4]), false);
        assert_eq!(added, set(&[4]).into_iter().collect::<Vec<_>>());
        assert!(removed.is_empty());
    }

    #[tokio::test]
    async fn a_name_that_does_not_resolve_makes_the_lookup_incomplete() {
        let sources = [
            PeerAddress {
                host: "127.0.0.1".into(),
                port: 7000,
            },
            PeerAddress {
                host: "no-such-peer.invalid".into(),
                port: 7000,
            },
        ];
        let mut failing = HashSet::new();
        let (found, complete) = resolve(&sources, &mut failing).await;
        assert!(!complete);
        assert_eq!(found, [SocketAddr::from(([127, 0, 0, 1], 7000))].into());
        assert!(failing.contains("no-such-peer.invalid:7000"));
    }
}

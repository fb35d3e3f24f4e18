//! The mesh section of the config: this node's identity, its mesh port, and where its
//! peers are.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::{ConfigError, Secret, Vars};

/// The peer mesh.
#[derive(Debug, Clone)]
pub struct MeshConfig {
    /// `QUEEN_MESH_PORT` (default 6633) on the host of `QUEEN_MESH_BIND_ADDR` (default:
    /// `QUEEN_BIND_ADDR`): where peers connect. Port 0 picks a free port (tests).
    pub bind: SocketAddr,
    /// `QUEEN_PEERS`: comma-separated `host:port` list of peers (this node's own address
    /// may be in it; it is recognised and skipped).
    pub peers: Vec<PeerAddress>,
    /// `QUEEN_PEER_DNS`: a name whose addresses are the peers (a Kubernetes headless
    /// service), as `name` (port: the mesh port) or `name:port`.
    pub peer_dns: Option<PeerAddress>,
    /// `QUEEN_PEER_DNS_REFRESH_MS`: how often the peer names are resolved again (default
    /// 5000), so scaling up and down is followed.
    pub dns_refresh: Duration,
    /// `QUEEN_NODE_ID`: this node's name in logs and metrics (default: the host name).
    pub node_id: String,
    /// `QUEEN_MESH_SECRET`: when set, peers must prove they know it (HMAC of a nonce), and
    /// every frame after the handshake carries a MAC under a key derived from it. Required
    /// when the mesh binds a non-loopback address, unless `QUEEN_MESH_INSECURE` is on.
    pub secret: Option<Secret>,
    /// `QUEEN_CLUSTER_NAME` (default `queen`): peers of another cluster are refused.
    pub cluster_name: String,
}

/// A peer as configured: a host name or IP, and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerAddress {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port of the peer's mesh listener.
    pub port: u16,
}

impl fmt::Display for PeerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl PeerAddress {
    /// Parses `host:port`, `[v6]:port`, or `host` alone with `default_port`.
    fn parse(raw: &str, default_port: Option<u16>) -> Option<Self> {
        let raw = raw.trim();
        let (host, port) = if let Some(rest) = raw.strip_prefix('[') {
            let (host, after) = rest.split_once(']')?;
            match after.strip_prefix(':') {
                Some(port) => (host, port.parse().ok()?),
                None if after.is_empty() => (host, default_port?),
                None => return None,
            }
        } else {
            match raw.rsplit_once(':') {
                Some((host, port)) if !host.contains(':') => (host, port.parse().ok()?),
                Some(_) => return None,
                None => (raw, default_port?),
            }
        };
        let valid = !host.is_empty()
            && port != 0
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
        valid.then(|| PeerAddress {
            host: host.to_owned(),
            port,
        })
    }
}

/// Reads the mesh section.
pub(super) fn mesh_config(vars: &Vars, http_ip: IpAddr) -> Result<MeshConfig, ConfigError> {
    let ip = vars.parse("QUEEN_MESH_BIND_ADDR", http_ip, "an IP address")?;
    let port: u16 = vars.parse("QUEEN_MESH_PORT", 6633, "a TCP port")?;
    let peers = match vars.get("QUEEN_PEERS") {
        None => Vec::new(),
        Some(list) => list
            .split(',')
            .filter(|entry| !entry.trim().is_empty())
            .map(|entry| {
                PeerAddress::parse(entry, None).ok_or_else(|| ConfigError::Invalid {
                    name: "QUEEN_PEERS",
                    value: list.to_owned(),
                    rule: "a comma-separated list of host:port",
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let peer_dns = match vars.get("QUEEN_PEER_DNS") {
        None => None,
        Some(name) => Some(
            PeerAddress::parse(name, Some(port).filter(|p| *p != 0)).ok_or_else(|| {
                ConfigError::Invalid {
                    name: "QUEEN_PEER_DNS",
                    value: name.to_owned(),
                    rule: "a DNS name, optionally with :port",
                }
            })?,
        ),
    };
    let node_id = match vars.get("QUEEN_NODE_ID") {
        Some(id) => id.trim().to_owned(),
        None => host_name(),
    };
    let secret = vars.get("QUEEN_MESH_SECRET").map(Secret::new);
    // An open mesh port reachable from other machines lets anyone who can reach it wake
    // consumers or flip maintenance mode: refuse it unless the operator says so.
    let insecure = vars.flag("QUEEN_MESH_INSECURE", false)?;
    if secret.is_none() && !ip.is_loopback() && !insecure {
        return Err(ConfigError::Invalid {
            name: "QUEEN_MESH_SECRET",
            value: String::new(),
            rule: "required when the mesh binds a non-loopback address \
                   (QUEEN_MESH_BIND_ADDR); QUEEN_MESH_INSECURE=1 runs without one",
        });
    }
    Ok(MeshConfig {
        bind: SocketAddr::new(ip, port),
        peers,
        peer_dns,
        dns_refresh: vars.millis("QUEEN_PEER_DNS_REFRESH_MS", 5_000)?,
        node_id,
        secret,
        cluster_name: vars.get("QUEEN_CLUSTER_NAME").unwrap_or("queen").to_owned(),
    })
}

/// The machine's host name (a pod's name in Kubernetes), or `queen` when it has none.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most that.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(name) if rc == 0 && !name.is_empty() => name.to_owned(),
        _ => "queen".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn the_mesh_defaults_to_port_6633_on_the_http_host_with_no_peers() {
        let config =
            Config::from_vars([("QUEEN_BIND_ADDR", "0.0.0.0"), ("QUEEN_MESH_INSECURE", "1")])
                .unwrap();
        assert_eq!(config.mesh.bind, "0.0.0.0:6633".parse().unwrap());
        assert!(config.mesh.peers.is_empty() && config.mesh.peer_dns.is_none());
        assert_eq!(config.mesh.cluster_name, "queen");
        assert!(!config.mesh.node_id.is_empty());
        assert!(config.mesh.secret.is_none());
    }

    #[test]
    fn peers_parse_from_a_list_and_dns_takes_the_mesh_port_by_default() {
        let config = Config::from_vars([
            ("QUEEN_PEERS", "10.0.0.1:7000, node-b:7001,[::1]:7002"),
            ("QUEEN_PEER_DNS", "queen-peers.ns.svc.cluster.local"),
            ("QUEEN_MESH_PORT", "7100"),
            ("QUEEN_MESH_SECRET", "hunter2"),
            ("QUEEN_NODE_ID", "a"),
        ])
        .unwrap();
        let peers: Vec<String> = config.mesh.peers.iter().map(|p| p.to_string()).collect();
        assert_eq!(peers, ["10.0.0.1:7000", "node-b:7001", "[::1]:7002"]);
        let dns = config.mesh.peer_dns.clone().unwrap();
        assert_eq!(
            (dns.host.as_str(), dns.port),
            ("queen-peers.ns.svc.cluster.local", 7100)
        );
        assert_eq!(config.mesh.node_id, "a");
        assert!(!format!("{:?}", config.mesh).contains("hunter2"));
    }

    #[test]
    fn a_mesh_on_a_non_loopback_address_needs_a_secret_or_an_explicit_insecure_switch() {
        for vars in [
            vec![("QUEEN_BIND_ADDR", "0.0.0.0")],
            vec![("QUEEN_MESH_BIND_ADDR", "10.1.2.3")],
            vec![("QUEEN_MESH_BIND_ADDR", "::"), ("QUEEN_MESH_INSECURE", "0")],
        ] {
            let err = Config::from_vars(vars.clone()).unwrap_err().to_string();
            assert!(err.contains("QUEEN_MESH_SECRET"), "{vars:?}: {err}");
        }
        // Loopback needs nothing; a secret or the explicit switch opens other addresses.
        assert!(Config::from_vars([("QUEEN_MESH_BIND_ADDR", "127.0.0.1")]).is_ok());
        assert!(
            Config::from_vars([("QUEEN_BIND_ADDR", "0.0.0.0"), ("QUEEN_MESH_SECRET", "s")]).is_ok()
        );
        assert!(Config::from_vars([
            ("QUEEN_BIND_ADDR", "0.0.0.0"),
            ("QUEEN_MESH_INSECURE", "true")
        ])
        .is_ok());
        // The HTTP address alone may be public while the mesh stays on loopback.
        assert!(Config::from_vars([
            ("QUEEN_BIND_ADDR", "0.0.0.0"),
            ("QUEEN_MESH_BIND_ADDR", "127.0.0.1")
        ])
        .is_ok());
    }

    #[test]
    fn a_peer_without_a_port_or_with_junk_is_refused_naming_the_variable() {
        for bad in [
            "node-b",
            "node-b:http",
            "a:1,b",
            "x y:7000",
            "[::1]",
            ":7000",
        ] {
            let err = Config::from_vars([("QUEEN_PEERS", bad)]).unwrap_err();
            assert!(err.to_string().contains("QUEEN_PEERS"), "{bad}: {err}");
        }
        assert!(Config::from_vars([("QUEEN_PEER_DNS", "bad name")]).is_err());
        assert!(Config::from_vars([("QUEEN_MESH_PORT", "70000")]).is_err());
    }
}

//! The Helm chart (`helm/queen`): `helm lint` passes, and `helm template` renders brokers
//! wired the way the broker reads its settings (bind address, database, mesh, probes,
//! termination). Runs the real helm; no cluster is involved, so nothing here starts a pod.
//! This file covers lint and the pods' shape and discovery; `credentials` covers where the
//! database settings and secrets come from, `operations` the rollout, disruption and
//! monitoring knobs, `monitoring` the Grafana dashboard and the alert rules, `security` the JWT settings and the
//! NetworkPolicy around the mesh port.

mod credentials;
mod monitoring;
mod operations;
pub mod render;
mod security;

use std::collections::BTreeSet;

use render::{selects, text, EnvSource, NAMESPACE};

/// The chart's resource name prefix, `<release>-queen`, for the release the renders use.
const FULLNAME: &str = "rel-queen";

/// `helm lint --strict` accepts the chart with its default values.
#[test]
fn helm_lint_passes_with_default_values() {
    let out = render::lint(&[]);

    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `helm lint --strict` accepts every example values file under `helm/queen/ci/`.
#[test]
fn helm_lint_passes_with_every_values_file_under_ci() {
    // Arrange
    let files: Vec<_> = std::fs::read_dir(render::chart_dir().join("ci"))
        .expect("helm/queen/ci exists")
        .map(|entry| entry.expect("readable entry").path())
        .collect();
    assert!(!files.is_empty(), "no values files under helm/queen/ci");

    for file in files {
        // Act
        let out = render::lint(&["-f", file.to_str().expect("UTF-8 path")]);

        // Assert
        assert!(
            out.status.success(),
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Every setting in `values.yaml` (each key that holds a value rather than nested keys) has
/// a comment on the line above it, as the style guide asks.
#[test]
fn helm_values_file_comments_every_setting() {
    // Arrange
    let values = std::fs::read_to_string(render::chart_dir().join("values.yaml"))
        .expect("values.yaml is readable");
    let lines: Vec<&str> = values.lines().collect();

    // Act
    let uncommented: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| is_key(line))
        .filter(|(i, line)| {
            let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
            let nests = next.is_some_and(|n| indent(n) > indent(line));
            let commented = *i > 0 && lines[i - 1].trim_start().starts_with('#');
            !nests && !commented
        })
        .map(|(_, line)| *line)
        .collect();

    // Assert
    assert!(
        uncommented.is_empty(),
        "settings without a comment: {uncommented:#?}"
    );
}

/// Default values render the brokers, their two Services, settings, Secret and PDB, and
/// none of the optional parts.
#[test]
fn helm_template_with_default_values_renders_the_broker_kinds_and_nothing_optional() {
    let r = render::render(&[]);

    let kinds: Vec<&str> = r.docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    let mut sorted = kinds.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [
            "ConfigMap",
            "PodDisruptionBudget",
            "Secret",
            "Service",
            "Service",
            "StatefulSet"
        ]
    );
    let names: BTreeSet<String> = r
        .all("Service")
        .iter()
        .map(|s| text(&s["metadata"]["name"]))
        .collect();
    assert_eq!(
        names,
        BTreeSet::from([FULLNAME.to_owned(), format!("{FULLNAME}-peers")])
    );
}

/// The brokers' workload runs `replicaCount` brokers.
#[test]
fn helm_template_sets_deployment_replicas_from_replica_count() {
    let default = render::render(&[]);
    let five = render::render(&[("replicaCount", "5")]);

    assert_eq!(default.brokers()["spec"]["replicas"], 3);
    assert_eq!(five.brokers()["spec"]["replicas"], 5);
}

/// Liveness and startup ask `/health/live`, readiness `/health/ready`, all on the port the
/// broker serves HTTP on, which follows `http.port`.
#[test]
fn helm_template_points_probes_at_live_and_ready_paths_on_the_http_port() {
    // Arrange
    let r = render::render(&[("http.port", "7000")]);
    let broker = r.broker();

    // Act
    let http_port = broker["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == "http")
        .expect("a port named http");

    // Assert
    assert_eq!(http_port["containerPort"], 7000);
    assert_eq!(r.setting("PORT"), "7000");
    for (probe, path) in [
        ("livenessProbe", "/health/live"),
        ("startupProbe", "/health/live"),
        ("readinessProbe", "/health/ready"),
    ] {
        assert_eq!(broker[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(broker[probe]["httpGet"]["port"], "http", "{probe}");
    }
    let service = r.named("Service", FULLNAME);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "http");
}

/// `QUEEN_PEER_DNS` is the headless peers Service's cluster DNS name; that Service selects
/// the broker pods, publishes them before they are ready, and exposes their mesh port.
#[test]
fn helm_template_names_a_headless_service_over_the_broker_pods_mesh_port_in_queen_peer_dns() {
    // Arrange
    let r = render::render(&[("mesh.port", "7700")]);
    let pod_labels = &r.brokers()["spec"]["template"]["metadata"]["labels"];

    // Act
    let dns = r.setting("QUEEN_PEER_DNS");
    let (service_name, rest) = dns.split_once('.').expect("a dotted DNS name");
    let peers = r.named("Service", service_name);

    // Assert
    assert_eq!(rest, format!("{NAMESPACE}.svc.cluster.local"));
    assert_eq!(peers["spec"]["clusterIP"], "None");
    assert_eq!(peers["spec"]["publishNotReadyAddresses"], true);
    assert!(selects(&peers["spec"]["selector"], pod_labels));
    assert_eq!(r.setting("QUEEN_MESH_PORT"), "7700");
    let port = &peers["spec"]["ports"][0];
    assert_eq!(port["port"], 7700);
    let mesh = r.broker()["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == port["targetPort"])
        .expect("the peers Service targets a named container port");
    assert_eq!(mesh["containerPort"], 7700);
}

/// The client Service selects the broker pods too, and listens where `service.port` says.
#[test]
fn helm_template_client_service_selects_the_broker_pods() {
    let r = render::render(&[("service.port", "80")]);

    let service = r.named("Service", FULLNAME);
    let pod_labels = &r.brokers()["spec"]["template"]["metadata"]["labels"];
    assert!(selects(&service["spec"]["selector"], pod_labels));
    assert!(service["spec"].get("clusterIP").is_none());
    assert_eq!(service["spec"]["ports"][0]["port"], 80);
}

/// Each broker's node id is its pod's name, from the downward API.
#[test]
fn helm_template_takes_queen_node_id_from_the_pod_name() {
    let r = render::render(&[]);

    assert_eq!(
        r.env("QUEEN_NODE_ID"),
        Some(EnvSource::Field("metadata.name".to_owned()))
    );
}

/// Brokers listen on every interface, never on the loopback default, and use the values'
/// cluster name, pool size and log settings.
#[test]
fn helm_template_binds_every_interface_and_passes_plain_settings_through() {
    let r = render::render(&[
        ("mesh.clusterName", "east"),
        ("database.poolSize", "12"),
        ("logging.format", "text"),
        ("logging.level", "debug"),
    ]);

    assert_eq!(r.setting("QUEEN_BIND_ADDR"), "0.0.0.0");
    assert_eq!(r.setting("QUEEN_CLUSTER_NAME"), "east");
    assert_eq!(r.setting("DB_POOL_SIZE"), "12");
    assert_eq!(r.setting("QUEEN_LOG_FORMAT"), "text");
    assert_eq!(r.setting("RUST_LOG"), "debug");
}

/// Whether a values.yaml line starts a `key:` (not a comment, list item or continuation).
fn is_key(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with(|c: char| c.is_ascii_alphabetic())
        && trimmed
            .split_once(':')
            .is_some_and(|(key, _)| !key.contains(' '))
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

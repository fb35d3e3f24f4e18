//! The Helm chart (`helm/queen`): `helm lint` passes, and `helm template` renders brokers
//! wired the way the broker reads its settings (bind address, database, mesh, probes,
//! termination). Runs the real helm; no cluster is involved, so nothing here starts a pod.

mod render;

use std::collections::BTreeSet;

use serde_json::{json, Value};

use render::{container, selects, text, EnvSource, Rendered, NAMESPACE};

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
            "Deployment",
            "PodDisruptionBudget",
            "Secret",
            "Service",
            "Service"
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

/// The Deployment runs `replicaCount` brokers.
#[test]
fn helm_template_sets_deployment_replicas_from_replica_count() {
    let default = render::render(&[]);
    let five = render::render(&[("replicaCount", "5")]);

    assert_eq!(default.one("Deployment")["spec"]["replicas"], 3);
    assert_eq!(five.one("Deployment")["spec"]["replicas"], 5);
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
    let pod_labels = &r.one("Deployment")["spec"]["template"]["metadata"]["labels"];

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
    let pod_labels = &r.one("Deployment")["spec"]["template"]["metadata"]["labels"];
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

/// By default the database password and the mesh secret come from the chart's own Secret,
/// which holds both keys, and the other database settings are plain PG_* values.
#[test]
fn helm_template_reads_database_password_and_mesh_secret_from_the_chart_secret_by_default() {
    // Arrange
    let r = render::render(&[
        ("database.host", "pg.example"),
        ("database.password", "hunter2"),
    ]);

    // Act
    let password = r.env("PG_PASSWORD");
    let mesh = r.env("QUEEN_MESH_SECRET");

    // Assert
    let secret = r.one("Secret");
    assert_eq!(secret["metadata"]["name"], FULLNAME);
    assert_eq!(password, Some(secret_ref(FULLNAME, "database-password")));
    assert_eq!(mesh, Some(secret_ref(FULLNAME, "mesh-secret")));
    // base64 of "hunter2"
    assert_eq!(secret["data"]["database-password"], "aHVudGVyMg==");
    assert!(
        !text(&secret["data"]["mesh-secret"]).is_empty(),
        "a generated mesh secret"
    );
    assert_eq!(r.setting("PG_HOST"), "pg.example");
    assert_eq!(r.setting("PG_USER"), "queen");
    assert_eq!(r.setting("PG_DB"), "queen");
    assert_eq!(r.env("DATABASE_URL"), None);
}

/// A `database.url` is stored in the chart's Secret and read as DATABASE_URL, with no PG_*
/// settings beside it.
#[test]
fn helm_template_keeps_database_url_in_the_chart_secret_not_the_config_map() {
    let r = render::render(&[("database.url", "postgres://q:pw@db/queen")]);

    assert_eq!(
        r.env("DATABASE_URL"),
        Some(secret_ref(FULLNAME, "database-url"))
    );
    assert!(r.one("Secret")["data"]["database-url"].is_string());
    for name in ["PG_HOST", "PG_PASSWORD", "PG_USER"] {
        assert_eq!(r.env(name), None, "{name}");
    }
}

/// With `existingSecret`, credentials come from that Secret under the configured keys and
/// the chart renders no Secret of its own.
#[test]
fn helm_template_reads_credentials_from_existing_secret_keys_and_renders_no_secret() {
    // Arrange
    let sets = [
        ("existingSecret.name", "ops-creds"),
        ("existingSecret.keys.databasePassword", "pg-pass"),
        ("existingSecret.keys.meshSecret", "mesh-key"),
    ];

    // Act
    let r = render::render(&sets);

    // Assert
    assert!(r.all("Secret").is_empty());
    assert_eq!(
        r.env("PG_PASSWORD"),
        Some(secret_ref("ops-creds", "pg-pass"))
    );
    assert_eq!(
        r.env("QUEEN_MESH_SECRET"),
        Some(secret_ref("ops-creds", "mesh-key"))
    );
    let annotations = &r.one("Deployment")["spec"]["template"]["metadata"]["annotations"];
    assert!(annotations.get("checksum/secret").is_none());
}

/// An `existingSecret` URL key supplies DATABASE_URL, and the PG_* settings are left out.
#[test]
fn helm_template_reads_database_url_from_existing_secret_when_its_url_key_is_set() {
    let r = render::render(&[
        ("existingSecret.name", "ops-creds"),
        ("existingSecret.keys.databaseUrl", "url"),
    ]);

    assert!(r.all("Secret").is_empty());
    assert_eq!(r.env("DATABASE_URL"), Some(secret_ref("ops-creds", "url")));
    assert_eq!(r.env("PG_HOST"), None);
    assert_eq!(r.env("PG_PASSWORD"), None);
    assert_eq!(
        r.env("QUEEN_MESH_SECRET"),
        Some(secret_ref("ops-creds", "mesh-secret"))
    );
}

/// Values with no database at all fail to render, since the broker would then start an
/// embedded PostgreSQL inside each pod.
#[test]
fn helm_template_refuses_values_that_leave_the_brokers_without_a_database() {
    let error = render::try_render(&[("database.host", "")]).err();

    let error = error.expect("rendering without a database fails");
    assert!(error.contains("no database"), "{error}");
}

/// The PodDisruptionBudget lets one broker go by default, follows `minAvailable` when set,
/// selects the broker pods, and disappears when disabled.
#[test]
fn helm_template_renders_the_pod_disruption_budget_from_its_values() {
    // Act
    let default = render::render(&[]);
    let min = render::render(&[("podDisruptionBudget.minAvailable", "2")]);
    let off = render::render(&[("podDisruptionBudget.enabled", "false")]);

    // Assert
    let pdb = &default.one("PodDisruptionBudget")["spec"];
    assert_eq!(pdb["maxUnavailable"], 1);
    assert!(pdb.get("minAvailable").is_none());
    let pod_labels = &default.one("Deployment")["spec"]["template"]["metadata"]["labels"];
    assert!(selects(&pdb["selector"]["matchLabels"], pod_labels));
    let pdb = &min.one("PodDisruptionBudget")["spec"];
    assert_eq!(pdb["minAvailable"], 2);
    assert!(pdb.get("maxUnavailable").is_none());
    assert!(off.all("PodDisruptionBudget").is_empty());
}

/// A ServiceMonitor appears only when enabled, and then scrapes the client Service's http
/// port at the configured path.
#[test]
fn helm_template_renders_a_service_monitor_only_when_enabled() {
    // Act
    let default = render::render(&[]);
    let on = render::render(&[
        ("metrics.serviceMonitor.enabled", "true"),
        ("metrics.serviceMonitor.labels.release", "prom"),
    ]);

    // Assert
    assert!(default.all("ServiceMonitor").is_empty());
    let monitor = on.one("ServiceMonitor");
    assert_eq!(monitor["metadata"]["labels"]["release"], "prom");
    let service = on.named("Service", FULLNAME);
    assert!(selects(
        &monitor["spec"]["selector"]["matchLabels"],
        &service["metadata"]["labels"]
    ));
    let peers = on.named("Service", &format!("{FULLNAME}-peers"));
    assert!(!selects(
        &monitor["spec"]["selector"]["matchLabels"],
        &peers["metadata"]["labels"]
    ));
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "http");
    assert_eq!(endpoint["path"], "/metrics/prometheus");
}

/// The broker container's requests and limits are the `resources` values.
#[test]
fn helm_template_renders_broker_resources_from_values() {
    let r = render::render(&[
        ("resources.requests.cpu", "2"),
        ("resources.requests.memory", "1Gi"),
        ("resources.limits.memory", "3Gi"),
    ]);

    let resources = &r.broker()["resources"];
    assert_eq!(resources["requests"]["cpu"], 2);
    assert_eq!(resources["requests"]["memory"], "1Gi");
    assert_eq!(resources["limits"]["memory"], "3Gi");
}

/// Termination sleeps in preStop before SIGTERM and leaves room after it for a 30 s
/// long-poll or statement; the native sleep action replaces `exec sleep` when chosen.
#[test]
fn helm_template_gives_terminating_brokers_a_pre_stop_sleep_and_room_to_drain() {
    // Act
    let exec = render::render(&[]);
    let native = render::render(&[("termination.preStopAction", "sleep")]);

    // Assert
    let pod = &exec.one("Deployment")["spec"]["template"]["spec"];
    let grace = pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("a grace period");
    let pre_stop = &exec.broker()["lifecycle"]["preStop"];
    assert_eq!(pre_stop["exec"]["command"], json!(["sleep", "5"]));
    assert!(grace >= 5 + 30, "grace period {grace} s");
    let pre_stop = &native.broker()["lifecycle"]["preStop"];
    assert_eq!(pre_stop["sleep"]["seconds"], 5);
    assert!(pre_stop.get("exec").is_none());
}

/// Changing a setting or a credential changes the pod template, so the brokers restart
/// and read it.
#[test]
fn helm_template_rolls_the_brokers_when_settings_or_credentials_change() {
    let base = render::render(&[]);
    let setting = render::render(&[("logging.level", "debug")]);
    let password = render::render(&[("database.password", "changed")]);

    let annotations = |r: &Rendered| -> Value {
        r.one("Deployment")["spec"]["template"]["metadata"]["annotations"].clone()
    };
    assert_ne!(
        annotations(&base)["checksum/config"],
        annotations(&setting)["checksum/config"]
    );
    assert_ne!(
        annotations(&base)["checksum/secret"],
        annotations(&password)["checksum/secret"]
    );
    assert_eq!(annotations(&base), annotations(&render::render(&[])));
}

/// The bundled PostgreSQL runs as its own StatefulSet beside the brokers, which point PG_HOST
/// at its Service, share its password Secret key and wait for it to answer; selectors never
/// mix the two.
#[test]
fn helm_template_wires_the_brokers_to_the_bundled_postgresql_when_enabled() {
    // Act
    let r = render::render(&[
        ("postgresql.enabled", "true"),
        ("postgresql.persistence.size", "3Gi"),
    ]);

    // Assert
    let name = format!("{FULLNAME}-postgresql");
    let pg = r.named("StatefulSet", &name);
    let pg_service = r.named("Service", &name);
    assert_eq!(r.setting("PG_HOST"), name);
    assert_eq!(r.setting("PG_PORT"), "5432");
    assert_eq!(pg_service["spec"]["ports"][0]["port"], 5432);
    let server = container(pg, "postgresql");
    let server_password = server["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == "POSTGRES_PASSWORD")
        .expect("POSTGRES_PASSWORD");
    let server_password = &server_password["valueFrom"]["secretKeyRef"];
    assert_eq!(
        r.env("PG_PASSWORD"),
        Some(secret_ref(
            &text(&server_password["name"]),
            &text(&server_password["key"])
        ))
    );
    assert!(r.one("Secret")["data"]["database-password"]
        .as_str()
        .is_some_and(|p| !p.is_empty()));
    let claim = &pg["spec"]["volumeClaimTemplates"][0]["spec"];
    assert_eq!(claim["resources"]["requests"]["storage"], "3Gi");

    let broker_pods = &r.one("Deployment")["spec"]["template"]["metadata"]["labels"];
    let pg_pods = &pg["spec"]["template"]["metadata"]["labels"];
    assert!(selects(&pg_service["spec"]["selector"], pg_pods));
    assert!(!selects(&pg_service["spec"]["selector"], broker_pods));
    let peers = r.named("Service", &format!("{FULLNAME}-peers"));
    assert!(!selects(&peers["spec"]["selector"], pg_pods));
    let init = &r.one("Deployment")["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(init["name"], "wait-for-postgresql");
}

fn secret_ref(name: &str, key: &str) -> EnvSource {
    EnvSource::Secret {
        name: name.to_owned(),
        key: key.to_owned(),
    }
}

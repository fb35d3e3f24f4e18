//! Running the brokers: disruption budget, ServiceMonitor, resources, termination, and the
//! checksums that roll the pods when their settings change.

use serde_json::{json, Value};

use super::render::{self, selects, Rendered};
use super::FULLNAME;

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
    let pod_labels = &default.brokers()["spec"]["template"]["metadata"]["labels"];
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
    let pod = &exec.brokers()["spec"]["template"]["spec"];
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
        r.brokers()["spec"]["template"]["metadata"]["annotations"].clone()
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

/// By default the brokers are a StatefulSet whose pods each claim a persistent volume for
/// the push spool (mounted where `FILE_BUFFER_DIR` points, writable by the broker's group);
/// `spool.persistence.enabled=false` renders the surging Deployment with the spool on the
/// pod's emptyDir instead.
#[test]
fn helm_template_keeps_each_brokers_spool_on_its_own_volume_claim_unless_turned_off() {
    // Arrange + Act
    let default = render::render(&[
        ("spool.persistence.size", "5Gi"),
        ("spool.persistence.storageClass", "fast"),
    ]);
    let off = render::render(&[("spool.persistence.enabled", "false")]);

    // Assert: the default.
    let set = default.brokers();
    assert_eq!(set["kind"], "StatefulSet");
    assert!(default.all("Deployment").is_empty());
    assert_eq!(set["spec"]["serviceName"], "rel-queen-peers");
    assert_eq!(set["spec"]["podManagementPolicy"], "Parallel");
    let claim = &set["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claim["metadata"]["name"], "spool");
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "5Gi");
    assert_eq!(claim["spec"]["storageClassName"], "fast");
    assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteOnce");
    let dir = default.setting("FILE_BUFFER_DIR");
    let mounts = default.broker()["volumeMounts"].as_array().expect("mounts");
    assert!(
        mounts
            .iter()
            .any(|m| m["name"] == "spool" && m["mountPath"] == dir.as_str()),
        "{mounts:?}"
    );
    assert!(!dir.starts_with("/tmp"), "{dir}");
    let pod = &set["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["fsGroup"], 10001);

    // Assert: turned off.
    let deployment = off.one("Deployment");
    assert!(off.all("StatefulSet").is_empty());
    assert_eq!(
        deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        1
    );
    assert_eq!(off.setting("FILE_BUFFER_DIR"), "/tmp/queen-spool");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    assert!(volumes.iter().all(|v| v["name"] != "spool"), "{volumes:?}");
}

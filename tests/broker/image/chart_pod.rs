//! The chart's broker container as the kubelet would run it in one pod: its argv (the
//! image's entrypoint and cmd, replaced by the container's command and args when set), its
//! environment (the ConfigMap of `envFrom`, then `env` entries with Secret keys and the
//! pod's name resolved), its user, and its named ports and probe paths. Read from a
//! `helm template` render; nothing is filled in that the chart does not say.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::helm_chart::render::{text, Rendered};

/// What one broker pod runs.
pub struct BrokerSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The environment, by name.
    pub env: BTreeMap<String, String>,
    /// `uid:gid` from the security contexts.
    pub user: String,
    /// The container port named `http`.
    pub http_port: u16,
    /// The container port named `mesh`.
    pub mesh_port: u16,
    /// Path of the readiness probe.
    pub ready_path: String,
    /// Path of the liveness probe.
    pub live_path: String,
    /// Path of the startup probe.
    pub startup_path: String,
    /// The preStop hook's command, when it is an exec hook.
    pub pre_stop: Option<Vec<String>>,
}

/// The broker container of `rendered` in a pod named `pod`, on an image whose
/// `Entrypoint` and `Cmd` are `image`.
pub fn broker_spec(
    rendered: &Rendered,
    image: &(Vec<String>, Vec<String>),
    pod: &str,
) -> BrokerSpec {
    let deployment = rendered.brokers();
    let broker = rendered.broker();
    let strings =
        |v: &Value| -> Option<Vec<String>> { v.as_array().map(|a| a.iter().map(text).collect()) };
    let (command, args) = (strings(&broker["command"]), strings(&broker["args"]));
    let argv = match command {
        Some(command) => [command, args.unwrap_or_default()].concat(),
        None => [image.0.clone(), args.unwrap_or_else(|| image.1.clone())].concat(),
    };
    let pod_security = &deployment["spec"]["template"]["spec"]["securityContext"];
    let id = |field: &str| -> String {
        let own = &broker["securityContext"][field];
        text(if own.is_null() {
            &pod_security[field]
        } else {
            own
        })
    };
    BrokerSpec {
        argv,
        env: environment(rendered, pod),
        user: format!("{}:{}", id("runAsUser"), id("runAsGroup")),
        http_port: port(broker, "http"),
        mesh_port: port(broker, "mesh"),
        ready_path: text(&broker["readinessProbe"]["httpGet"]["path"]),
        live_path: text(&broker["livenessProbe"]["httpGet"]["path"]),
        startup_path: text(&broker["startupProbe"]["httpGet"]["path"]),
        pre_stop: strings(&broker["lifecycle"]["preStop"]["exec"]["command"]),
    }
}

/// Every variable name the broker container gets: its ConfigMaps' keys and its `env` names.
pub fn env_names(rendered: &Rendered) -> BTreeSet<String> {
    let broker = rendered.broker();
    let from_maps = config_maps(rendered, broker).flat_map(|data| {
        data.as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
    });
    let direct = broker["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| text(&e["name"]));
    from_maps.chain(direct).collect()
}

/// The environment as the kubelet builds it: `envFrom` first, `env` entries over it.
fn environment(rendered: &Rendered, pod: &str) -> BTreeMap<String, String> {
    let broker = rendered.broker();
    let mut env = BTreeMap::new();
    for data in config_maps(rendered, broker) {
        for (name, value) in data.as_object().into_iter().flatten() {
            env.insert(name.clone(), text(value));
        }
    }
    for entry in broker["env"].as_array().into_iter().flatten() {
        let from = &entry["valueFrom"];
        let value = if let Some(secret) = from.get("secretKeyRef") {
            secret_value(rendered, &text(&secret["name"]), &text(&secret["key"]))
        } else if let Some(field) = from.get("fieldRef") {
            let path = text(&field["fieldPath"]);
            assert_eq!(path, "metadata.name", "a pod field this test cannot supply");
            pod.to_owned()
        } else {
            text(&entry["value"])
        };
        env.insert(text(&entry["name"]), value);
    }
    for (name, value) in &env {
        assert!(
            !value.contains("$("),
            "{name} uses $(VAR) expansion: {value}"
        );
    }
    env
}

/// The `data` of each ConfigMap the container reads through `envFrom`.
fn config_maps<'a>(rendered: &'a Rendered, broker: &'a Value) -> impl Iterator<Item = &'a Value> {
    broker["envFrom"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|from| from["configMapRef"]["name"].as_str())
        .map(|name| &rendered.named("ConfigMap", name)["data"])
}

/// A key of a Secret the render holds (the chart's own), decoded.
fn secret_value(rendered: &Rendered, name: &str, key: &str) -> String {
    let encoded = text(&rendered.named("Secret", name)["data"][key]);
    String::from_utf8(base64_decode(&encoded)).expect("a UTF-8 secret")
}

fn port(container: &Value, name: &str) -> u16 {
    let port = container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no container port named {name}"));
    port["containerPort"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .expect("a port number")
}

/// Standard base64 (what a Secret's `data` holds); panics on anything else.
fn base64_decode(encoded: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in encoded.bytes().filter(|b| *b != b'=') {
        let value = ALPHABET
            .iter()
            .position(|c| *c == byte)
            .unwrap_or_else(|| panic!("not base64: {encoded}"));
        bits = (bits << 6) | value as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

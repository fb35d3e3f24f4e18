//! Runs the real `helm` on `helm/queen` and parses what it renders, so the chart tests
//! assert on manifest fields. Finding (or fetching) the helm binary lives here too; what the
//! chart should render is left to the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// Release name every render uses.
pub const RELEASE: &str = "rel";
/// Namespace every render uses.
pub const NAMESPACE: &str = "queens";

/// The chart's folder.
pub fn chart_dir() -> PathBuf {
    repo_root().join("helm/queen")
}

/// `helm lint --strict` on the chart with extra arguments (values files, `--set`).
pub fn lint(args: &[&str]) -> Output {
    let chart = chart_dir();
    let mut all = vec![
        "lint",
        "--strict",
        chart.to_str().expect("repo path is UTF-8"),
    ];
    all.extend_from_slice(args);
    run_helm(&all)
}

/// `helm template` with `--set name=value` pairs; panics with helm's error if it fails.
pub fn render(sets: &[(&str, &str)]) -> Rendered {
    match try_render(sets) {
        Ok(rendered) => rendered,
        Err(error) => panic!("helm template failed: {error}"),
    }
}

/// `helm template` with `--set name=value` pairs: the manifests, or helm's error text.
pub fn try_render(sets: &[(&str, &str)]) -> Result<Rendered, String> {
    let chart = chart_dir();
    let mut args = vec![
        "template".to_owned(),
        RELEASE.to_owned(),
        chart.to_str().expect("repo path is UTF-8").to_owned(),
        "--namespace".to_owned(),
        NAMESPACE.to_owned(),
    ];
    for (name, value) in sets {
        args.push("--set".to_owned());
        args.push(format!("{name}={value}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_helm(&args);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(Rendered::parse(&String::from_utf8_lossy(&out.stdout)))
}

/// The documents one render produced, as JSON values.
pub struct Rendered {
    /// Every non-empty document, in helm's order.
    pub docs: Vec<Value>,
}

impl Rendered {
    fn parse(text: &str) -> Self {
        let docs = serde_norway::Deserializer::from_str(text)
            .map(|doc| Value::deserialize(doc).expect("helm renders valid YAML"))
            .filter(|doc| !doc.is_null())
            .collect();
        Self { docs }
    }

    /// Every document of one kind.
    pub fn all(&self, kind: &str) -> Vec<&Value> {
        self.docs.iter().filter(|d| d["kind"] == kind).collect()
    }

    /// The only document of one kind; panics if there are none or several.
    pub fn one(&self, kind: &str) -> &Value {
        let found = self.all(kind);
        assert_eq!(found.len(), 1, "expected one {kind}, got {}", found.len());
        found[0]
    }

    /// The document of one kind and name; panics if it is missing.
    pub fn named(&self, kind: &str, name: &str) -> &Value {
        self.docs
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} named {name}"))
    }

    /// The brokers' workload: the StatefulSet (`spool.persistence.enabled`, the default)
    /// or the Deployment; panics unless exactly one of the two is rendered.
    pub fn brokers(&self) -> &Value {
        let found: Vec<&Value> = self
            .docs
            .iter()
            .filter(|d| d["kind"] == "StatefulSet" || d["kind"] == "Deployment")
            .filter(|d| d["metadata"]["labels"]["app.kubernetes.io/component"] == "broker")
            .collect();
        assert_eq!(found.len(), 1, "expected one broker workload");
        found[0]
    }

    /// The broker container of the brokers' workload.
    pub fn broker(&self) -> &Value {
        container(self.brokers(), "queen")
    }

    /// Where the broker container's variable `name` comes from, as a pod would see it:
    /// its own `env` entry first, then the ConfigMaps named in `envFrom`.
    pub fn env(&self, name: &str) -> Option<EnvSource> {
        let broker = self.broker();
        let direct = broker["env"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["name"] == name);
        if let Some(entry) = direct {
            return Some(EnvSource::of(entry));
        }
        broker["envFrom"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|from| from["configMapRef"]["name"].as_str())
            .find_map(|map| self.named("ConfigMap", map)["data"][name].as_str())
            .map(|value| EnvSource::Value(value.to_owned()))
    }

    /// The value of a broker variable that must be a plain setting (env or ConfigMap).
    pub fn setting(&self, name: &str) -> String {
        match self.env(name) {
            Some(EnvSource::Value(value)) => value,
            other => panic!("{name} is not a plain setting: {other:?}"),
        }
    }
}

/// Where a container variable gets its value.
#[derive(Debug, PartialEq, Eq)]
pub enum EnvSource {
    /// A literal value (from `env` or a ConfigMap).
    Value(String),
    /// A key of a Secret.
    Secret {
        /// The Secret's name.
        name: String,
        /// The key within it.
        key: String,
    },
    /// A field of the pod (downward API).
    Field(String),
}

impl EnvSource {
    fn of(entry: &Value) -> Self {
        let from = &entry["valueFrom"];
        if let Some(secret) = from.get("secretKeyRef") {
            return Self::Secret {
                name: text(&secret["name"]),
                key: text(&secret["key"]),
            };
        }
        if let Some(field) = from.get("fieldRef") {
            return Self::Field(text(&field["fieldPath"]));
        }
        Self::Value(text(&entry["value"]))
    }
}

/// The container of that name in a workload's pod template.
pub fn container<'a>(workload: &'a Value, name: &str) -> &'a Value {
    workload["spec"]["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

/// Whether every `key: value` of `selector` is among `labels`.
pub fn selects(selector: &Value, labels: &Value) -> bool {
    let selector = selector.as_object().expect("a selector is a map");
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// A string field as an owned string (numbers too, as YAML may render either).
pub fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => panic!("missing field"),
        other => other.to_string(),
    }
}

fn run_helm(args: &[&str]) -> Output {
    Command::new(helm()).args(args).output().expect("helm runs")
}

/// The helm binary: `QUEEN_HELM`, else `helm` on PATH, else `target/tools/helm` in the
/// repository, fetched there by `helm/fetch-helm.sh` on first use. Tests run in parallel
/// threads, so the search (and any fetch) happens once per test binary.
fn helm() -> &'static Path {
    static HELM: OnceLock<PathBuf> = OnceLock::new();
    HELM.get_or_init(|| {
        if let Some(path) = std::env::var_os("QUEEN_HELM") {
            return PathBuf::from(path);
        }
        if let Some(found) = on_path("helm") {
            return found;
        }
        let tools = repo_root().join("target/tools");
        let local = tools.join("helm");
        if !local.is_file() {
            fetch_helm(&tools);
        }
        local
    })
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

fn fetch_helm(dest: &Path) {
    let script = repo_root().join("helm/fetch-helm.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(dest)
        .output()
        .expect("bash runs helm/fetch-helm.sh");
    assert!(
        out.status.success(),
        "helm/fetch-helm.sh failed (set QUEEN_HELM to a helm 3 binary instead): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

//! The container image (`Containerfile`) run the way the Helm chart runs it. The image is
//! built with real buildah on a Debian bookworm base that `cluster/image/make-base.sh`
//! makes with mmdebstrap (no image registry is needed), then two pods of the chart's
//! Deployment are started from it, each in a network namespace of its own with exactly the
//! container's command, args, environment and user, against the harness's PostgreSQL.
//!
//! The image is the Containerfile's `prebuilt` target: its runtime stage (on the
//! mmdebstrap base, what debian:bookworm-slim is) holding the broker cargo built for this
//! test binary, stripped. The `build` stage (a release build inside the image) is not run
//! here: it compiles the whole project again, minutes on two cores; the toolchain stage's
//! one use in a `prebuilt` build, the CA bundle, comes from the base plus this machine's
//! bundle. The storage lives under `target/tmp/buildah` with buildah's layer cache, and the
//! mmdebstrap tarball under `target/tmp/image`, so only the first run makes the base.
//!
//! Needs root, buildah, mmdebstrap, iproute2 and binutils (`.ci/run` installs them), and
//! helm like the chart tests. Without them the test fails saying what to install;
//! `QUEEN_SKIP_IMAGE_TEST=1` skips it, loudly.

mod buildah;
mod chart_pod;
mod pod;

use std::collections::BTreeSet;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use queen::config::KNOWN_VARS;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::helm_chart::render;
use crate::support::fixtures::TIMING;
use crate::support::{ack_batch, eventually, postgres, read};
use buildah::Image;
use chart_pod::{broker_spec, env_names, BrokerSpec};
use pod::{Lan, Pod};

/// How long a pod may take to turn ready (the first one applies the schema).
const READY_WITHIN: Duration = Duration::from_secs(60);

/// Every variable the chart passes to the brokers, whichever way the database is given,
/// is one the broker reads (`queen::config::KNOWN_VARS`), and the README's configuration
/// table documents exactly the variables the broker reads.
#[test]
fn every_variable_the_chart_passes_is_one_the_broker_reads_and_the_readme_lists_them() {
    // Arrange
    let known: BTreeSet<String> = KNOWN_VARS.iter().map(|v| v.to_string()).collect();
    let renders = [
        render::render(&[("mesh.peerDnsRefreshMs", "2000")]),
        render::render(&[("database.url", "postgres://q:pw@db/queen")]),
        render::render(&[("postgresql.enabled", "true")]),
        render::render(&[
            ("existingSecret.name", "creds"),
            ("existingSecret.keys.databaseUrl", "url"),
        ]),
        render::render(&[
            ("auth.jwt.enabled", "true"),
            ("auth.jwt.issuer", "i"),
            ("auth.jwt.audience", "a"),
            ("auth.jwt.jwksUrl", "http://idp/jwks"),
            ("auth.jwt.skipPaths", "/health"),
            ("auth.jwt.roleClaim", "r"),
            ("auth.jwt.rolesClaim", "rs"),
        ]),
    ];

    // Act
    let passed: BTreeSet<String> = renders.iter().flat_map(env_names).collect();
    let documented = readme_configuration_names();

    // Assert
    let unknown: Vec<&String> = passed.difference(&known).collect();
    assert!(unknown.is_empty(), "the chart passes unknown {unknown:?}");
    assert_eq!(
        documented, known,
        "README configuration table vs KNOWN_VARS"
    );
}

/// Two pods of the chart's Deployment, each the image started with the container's own
/// command, args, environment and user: both turn ready on the readiness probe's path,
/// listen on the mesh port and find each other through the peers DNS name (with the mesh
/// secret), serve a push on one and its pop and ack on the other, and run the preStop
/// command and stop on SIGTERM. Prints the image's size and each pod's time to ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_runs_two_chart_pods_that_turn_ready_mesh_as_peers_and_serve_push_pop_ack() {
    if !image_tools_present() {
        return;
    }
    // A build and two broker processes load the machine: keep the timing tests away.
    let _quiet = TIMING.lock().await;
    // Arrange: the image, a network, the database reachable from it, the chart's pods.
    let pg = postgres::fresh_database().await;
    let binary = Path::new(env!("CARGO_BIN_EXE_queen"));
    let image = tokio::task::spawn_blocking(|| Image::build_prebuilt(binary))
        .await
        .expect("the image build finishes");
    report(&format!(
        "image {}: {} (base and build took {:.1} s)",
        image.name,
        image.size,
        image.build_time.as_secs_f64()
    ));
    let lan = Lan::new();
    let relay = Relay::start(lan.address(1), socket_file(&pg)).await;
    let dbname = pg.get_dbname().expect("a database name").to_owned();
    let rendered = render::render(&[
        ("database.host", &lan.address(1).to_string()),
        ("database.port", &relay.port.to_string()),
        ("database.user", pg.get_user().expect("a user")),
        ("database.name", &dbname),
        ("database.password", "unused-the-test-server-trusts"),
        // The pods here mount only the chart's /tmp emptyDir, not a volume claim.
        ("spool.persistence.enabled", "false"),
    ]);
    let entry = image.entrypoint_and_cmd();
    let names = ["rel-queen-6b7f9c5d8-x2k4q", "rel-queen-6b7f9c5d8-p7m3z"];
    let peer_dns = rendered.setting("QUEEN_PEER_DNS");
    let hosts = format!(
        "127.0.0.1 localhost\n{a} {peer_dns}\n{b} {peer_dns}\n",
        a = lan.pod_address(1),
        b = lan.pod_address(2)
    );
    let mut pods: Vec<(Pod, BrokerSpec)> = names
        .iter()
        .zip(1u8..)
        .map(|(name, i)| {
            (
                lan.pod(i, name, &hosts),
                broker_spec(&rendered, &entry, name),
            )
        })
        .collect();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("http client");

    // Act: start the pods one after the other, the second on an up-to-date schema.
    let mut ready_after = Vec::new();
    for (pod, spec) in &mut pods {
        assert_eq!(
            image.config["User"], spec.user,
            "the image's user is the chart's runAsUser:runAsGroup"
        );
        let env: Vec<(String, String)> = spec.env.clone().into_iter().collect();
        pod.create(&image.name);
        let began = Instant::now();
        pod.start(&spec.user, &env, &spec.argv);
        let ready = probe(
            &http,
            pod.address,
            spec.http_port,
            &spec.ready_path,
            READY_WITHIN,
        )
        .await;
        assert!(
            ready,
            "{} never answered 200 on {}",
            pod.name, spec.ready_path
        );
        ready_after.push(began.elapsed());
    }
    report(&format!(
        "image time to ready: {:.2} s (first pod, applies the schema), {:.2} s (second pod, schema up to date)",
        ready_after[0].as_secs_f64(),
        ready_after[1].as_secs_f64()
    ));

    // Assert: probes, peers, mesh port.
    for (pod, spec) in &pods {
        for path in [&spec.live_path, &spec.startup_path, &spec.ready_path] {
            let ok = probe(&http, pod.address, spec.http_port, path, Duration::ZERO).await;
            assert!(ok, "{} answers {path}", pod.name);
        }
    }
    for (i, (pod, spec)) in pods.iter().enumerate() {
        let (other, other_spec) = &pods[1 - i];
        let other_mesh = format!("{}:{}", other.address, other_spec.mesh_port);
        let base = format!("http://{}:{}", pod.address, spec.http_port);
        let meshed = eventually(Duration::from_secs(30), || {
            let (http, base, other_mesh) = (http.clone(), base.clone(), other_mesh.clone());
            async move {
                let mesh = metrics(&http, &base).await?["mesh"].clone();
                let peer = mesh["peers"]
                    .as_array()?
                    .iter()
                    .find(|p| p["addr"] == other_mesh.as_str() && p["connected"] == true)?
                    .clone();
                (mesh["peersConnected"] == 1).then_some((mesh, peer))
            }
        })
        .await;
        let (mesh, _) =
            meshed.unwrap_or_else(|| panic!("{} never connected to {other_mesh}", pod.name));
        assert_eq!(mesh["nodeId"], pod.name.as_str(), "node id is the pod name");
        assert_eq!(mesh["handshakesRefused"], 0, "the mesh secret matches");
    }
    for (pod, spec) in &pods {
        // From outside too, as the peers Service reaches it (after the check above: a bare
        // connection counts as a refused handshake).
        let mesh = SocketAddr::from((pod.address, spec.mesh_port));
        let connected = tokio::net::TcpStream::connect(mesh).await;
        assert!(connected.is_ok(), "{mesh} accepts: {connected:?}");
    }

    // Assert: a push on the first pod is popped and acked on the second.
    let [a, b] = [0, 1].map(|i| format!("http://{}:{}", pods[i].0.address, pods[i].1.http_port));
    let pushed = http
        .post(format!("{a}/api/v1/push"))
        .json(
            &json!({"items": [{"queue": "image", "partition": "p", "payload": {"n": 1}},
                                {"queue": "image", "partition": "p", "payload": {"n": 2}}]}),
        )
        .send()
        .await
        .expect("push reaches the first pod");
    let (status, body) = read(pushed).await;
    assert!(status.is_success(), "push: {status} {body}");
    let popped = http
        .get(format!(
            "{b}/api/v1/pop/queue/image?batch=10&wait=true&timeout=5000"
        ))
        .send()
        .await
        .expect("pop reaches the second pod");
    let (status, body) = read(popped).await;
    assert_eq!(status, StatusCode::OK, "pop: {body}");
    let messages = body["messages"].as_array().expect("messages").clone();
    let data: Vec<&Value> = messages.iter().map(|m| &m["data"]).collect();
    assert_eq!(data, [&json!({"n": 1}), &json!({"n": 2})]);
    let acks = ack_batch(&http, &b, &messages, "completed", None).await;
    assert!(acks.iter().all(|a| a["success"] == true), "{acks:?}");
    let again = http
        .get(format!("{a}/api/v1/pop/queue/image?batch=10"))
        .send()
        .await
        .expect("pop reaches the first pod");
    assert_eq!(
        again.status(),
        StatusCode::NO_CONTENT,
        "acked messages stay acked"
    );

    // Assert: termination as the kubelet does it: preStop, then SIGTERM, then gone.
    for (pod, spec) in &mut pods {
        if let Some(pre_stop) = &spec.pre_stop {
            let status = tokio::task::block_in_place(|| pod.exec(&spec.user, pre_stop));
            assert!(
                status.success(),
                "{}: preStop {pre_stop:?}: {status}",
                pod.name
            );
        }
        let status = tokio::task::block_in_place(|| pod.stop(Duration::from_secs(30)));
        let status = status.unwrap_or_else(|| panic!("{} outlived SIGTERM", pod.name));
        assert!(status.success(), "{} exited with {status}", pod.name);
    }
    drop(pods);
    drop(relay);
}

/// Prints a measurement where CI logs show it: straight to the standard error stream,
/// which the test harness does not capture (it captures only the print macros).
fn report(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Whether the image test can run: true when the tools are there; false (after saying so
/// loudly) when `QUEEN_SKIP_IMAGE_TEST=1`; otherwise it fails naming what to install.
fn image_tools_present() -> bool {
    if std::env::var("QUEEN_SKIP_IMAGE_TEST").as_deref() == Ok("1") {
        report("**** SKIPPED: the image test (QUEEN_SKIP_IMAGE_TEST=1) ****");
        return false;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let missing: Vec<&str> = ["buildah", "mmdebstrap", "ip", "objcopy", "flock"]
        .into_iter()
        .filter(|tool| !on_path(tool))
        .collect();
    assert!(
        root && missing.is_empty(),
        "the image test needs root (it makes network namespaces) and buildah, mmdebstrap, \
         iproute2 and binutils; missing: {missing:?}{}. On Debian: apt-get install -y buildah \
         mmdebstrap iproute2 binutils. To skip it: QUEEN_SKIP_IMAGE_TEST=1",
        if root { "" } else { ", root" }
    );
    true
}

/// Polls `path` on a pod until it answers 200 or `within` passes; true if it did.
async fn probe(
    http: &reqwest::Client,
    address: Ipv4Addr,
    port: u16,
    path: &str,
    within: Duration,
) -> bool {
    let url = format!("http://{address}:{port}{path}");
    eventually(within, || {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let answer = http.get(url).timeout(Duration::from_secs(2)).send().await;
            answer.ok()?.status().is_success().then_some(())
        }
    })
    .await
    .is_some()
}

/// A pod's `/metrics`, or None while it does not answer.
async fn metrics(http: &reqwest::Client, base: &str) -> Option<Value> {
    let answer = http.get(format!("{base}/metrics")).send().await.ok()?;
    answer.json().await.ok()
}

/// The Unix socket of the harness's PostgreSQL for this database config.
fn socket_file(pg: &tokio_postgres::Config) -> PathBuf {
    let dir = pg
        .get_hosts()
        .iter()
        .find_map(|h| match h {
            tokio_postgres::config::Host::Unix(dir) => Some(dir.clone()),
            _ => None,
        })
        .expect("the test PostgreSQL listens on a Unix socket");
    let port = pg.get_ports().first().copied().unwrap_or(5432);
    dir.join(format!(".s.PGSQL.{port}"))
}

/// Forwards TCP connections on one address of the pods' network to the test PostgreSQL's
/// Unix socket, byte for byte: the pods reach the database over their network, as pods
/// reach a database server. Stops on drop.
struct Relay {
    port: u16,
    task: JoinHandle<()>,
}

impl Relay {
    async fn start(address: Ipv4Addr, socket: PathBuf) -> Self {
        let listener = tokio::net::TcpListener::bind((address, 0))
            .await
            .expect("bind the relay on the pods' network");
        let port = listener.local_addr().expect("relay address").port();
        let task = tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let socket = socket.clone();
                tokio::spawn(async move {
                    if let Ok(mut unix) = tokio::net::UnixStream::connect(&socket).await {
                        let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                    }
                });
            }
        });
        Relay { port, task }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The variable names in the first column of the README's configuration table.
fn readme_configuration_names() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md is readable");
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Configuration"))
        .expect("a Configuration section");
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name.to_owned()))
        .collect()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

//! The fault run's nemesis: every few seconds (a seeded schedule) one fault, held and then
//! healed: a node SIGKILLed and started again, a node SIGSTOPped past a lease and continued,
//! PostgreSQL restarted, the mesh cut between two nodes (firewall rules on loopback that
//! match each node's cgroup), node C's spool disk (a small tmpfs) filled while push
//! maintenance sends pushes to the spools, and push maintenance switched on and off.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::super::cluster::TestCluster;
use crate::support::private_postgres::PrivatePostgres;

/// How long a killed node stays dead.
const KILLED_FOR: Duration = Duration::from_secs(1);
/// How long PostgreSQL stays down.
const POSTGRES_DOWN_FOR: Duration = Duration::from_secs(2);
/// How long a cut, a full disk or push maintenance lasts.
const HELD_FOR: Duration = Duration::from_secs(3);
/// Node C (index 2) has its spool on the small disk.
pub const SMALL_DISK_NODE: usize = 2;

/// One kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// SIGKILL a node, start it again.
    Kill,
    /// SIGSTOP a node past a lease, then SIGCONT.
    Pause,
    /// Stop PostgreSQL, start it again.
    PostgresRestart,
    /// Drop the mesh traffic between two nodes.
    MeshCut,
    /// Fill node C's spool disk while push maintenance is on.
    SpoolFull,
    /// Push maintenance on, then off.
    PushMaintenance,
}

impl Fault {
    /// Every kind, in table order.
    pub const ALL: [Fault; 6] = [
        Fault::Kill,
        Fault::Pause,
        Fault::PostgresRestart,
        Fault::MeshCut,
        Fault::SpoolFull,
        Fault::PushMaintenance,
    ];

    /// The name printed.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Pause => "pause",
            Fault::PostgresRestart => "postgres restart",
            Fault::MeshCut => "mesh cut",
            Fault::SpoolFull => "spool disk full",
            Fault::PushMaintenance => "push maintenance",
        }
    }
}

/// The faults and what they act on. Fields drop in order: the cluster first (its nodes
/// stop), then PostgreSQL, the firewall rules and cgroups, and the small disk.
pub struct Nemesis {
    /// The three nodes.
    pub cluster: TestCluster,
    server: Option<PrivatePostgres>,
    cutter: Option<MeshCutter>,
    disk: Option<SmallDisk>,
    rng: fastrand::Rng,
    bag: Vec<Fault>,
    lease: Duration,
    gap: Duration,
    start: Instant,
    /// How many times each kind fired.
    pub fired: BTreeMap<Fault, usize>,
    /// One line per fault, with its time since the start.
    pub log: Vec<String>,
    /// Each fault with when it began and when it was healed.
    pub windows: Vec<(Fault, Instant, Instant)>,
}

impl Nemesis {
    /// A nemesis over a started cluster; `gap` is the mean pause between two faults.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cluster: TestCluster,
        server: PrivatePostgres,
        cutter: Option<MeshCutter>,
        disk: Option<SmallDisk>,
        seed: u64,
        lease: Duration,
        gap: Duration,
        start: Instant,
    ) -> Self {
        Nemesis {
            cluster,
            server: Some(server),
            cutter,
            disk,
            rng: fastrand::Rng::with_seed(seed),
            bag: Vec::new(),
            lease,
            gap,
            start,
            fired: BTreeMap::new(),
            log: Vec::new(),
            windows: Vec::new(),
        }
    }

    /// The kinds this machine can inject (a mesh cut needs cgroup v2 and iptables, a full
    /// disk needs a tmpfs mount).
    pub fn available(&self) -> Vec<Fault> {
        Fault::ALL
            .into_iter()
            .filter(|f| match f {
                Fault::MeshCut => self.cutter.is_some(),
                Fault::SpoolFull => self.disk.is_some(),
                _ => true,
            })
            .collect()
    }

    /// Injects faults until `until`: a pause of 0.5-1.5 × the gap, then the next fault of a
    /// seeded shuffle of every available kind (so each kind fires once per round).
    pub async fn run(&mut self, until: Instant) {
        loop {
            let gap = self.gap.mul_f64(0.5 + self.rng.f64());
            tokio::time::sleep(gap).await;
            if Instant::now() >= until {
                return;
            }
            if self.bag.is_empty() {
                self.bag = self.available();
                self.rng.shuffle(&mut self.bag);
            }
            let fault = self.bag.pop().expect("a fault");
            self.inject(fault).await;
        }
    }

    fn note(&mut self, line: String) {
        let line = format!("[{:>7.1}s] {line}", self.start.elapsed().as_secs_f64());
        eprintln!("nemesis {line}");
        self.log.push(line);
    }

    async fn inject(&mut self, fault: Fault) {
        let began = Instant::now();
        self.apply(fault).await;
        self.windows.push((fault, began, Instant::now()));
    }

    async fn apply(&mut self, fault: Fault) {
        *self.fired.entry(fault).or_default() += 1;
        let n = self.cluster.nodes().len();
        match fault {
            Fault::Kill => {
                let i = self.rng.usize(0..n);
                self.note(format!("kill: SIGKILL node {}", self.cluster.node(i).id));
                self.cluster.kill_hard(i);
                tokio::time::sleep(KILLED_FOR).await;
                self.cluster.restart(i).await;
                self.note(format!(
                    "kill: node {} answers again",
                    self.cluster.node(i).id
                ));
            }
            Fault::Pause => {
                let i = self.rng.usize(0..n);
                let pid = self.cluster.pid(i) as i32;
                let held = self.lease + Duration::from_millis(1500);
                self.note(format!(
                    "pause: SIGSTOP node {} for {held:?}",
                    self.cluster.node(i).id
                ));
                // SAFETY: kill(2) on the pid of a node the cluster has not reaped.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                tokio::time::sleep(held).await;
                unsafe { libc::kill(pid, libc::SIGCONT) };
                self.note(format!("pause: SIGCONT node {}", self.cluster.node(i).id));
            }
            Fault::PostgresRestart => {
                self.note(format!("postgres restart: down for {POSTGRES_DOWN_FOR:?}"));
                let mut server = self.server.take().expect("the server");
                let server = tokio::task::spawn_blocking(move || {
                    server.restart(POSTGRES_DOWN_FOR);
                    server
                })
                .await
                .expect("restart PostgreSQL");
                self.server = Some(server);
                self.note("postgres restart: up again".to_owned());
            }
            Fault::MeshCut => {
                let i = self.rng.usize(0..n);
                let j = (i + 1 + self.rng.usize(0..n - 1)) % n;
                let (a, b) = (self.cluster.node(i), self.cluster.node(j));
                let (ids, ports) = ((a.id.clone(), b.id.clone()), (a.mesh_port, b.mesh_port));
                let cutter = self.cutter.as_mut().expect("a cutter");
                cutter.cut(i, j, ports.0, ports.1);
                self.note(format!(
                    "mesh cut: {} <-/-> {} for {HELD_FOR:?}",
                    ids.0, ids.1
                ));
                tokio::time::sleep(HELD_FOR).await;
                self.cutter.as_mut().expect("a cutter").heal();
                self.note(format!("mesh cut: {} <-> {} healed", ids.0, ids.1));
            }
            Fault::SpoolFull => {
                let filled = self.disk.as_ref().expect("a disk").fill();
                self.note(format!(
                    "spool disk full: node {}'s spool disk filled ({filled} bytes), push \
                     maintenance on for {HELD_FOR:?}",
                    self.cluster.node(SMALL_DISK_NODE).id
                ));
                self.maintenance(SMALL_DISK_NODE, true).await;
                tokio::time::sleep(HELD_FOR).await;
                self.maintenance(SMALL_DISK_NODE, false).await;
                self.disk.as_ref().expect("a disk").empty();
                self.note("spool disk full: maintenance off, disk emptied".to_owned());
            }
            Fault::PushMaintenance => {
                let i = self.rng.usize(0..n);
                self.note(format!(
                    "push maintenance: on through node {} for {HELD_FOR:?}",
                    self.cluster.node(i).id
                ));
                self.maintenance(i, true).await;
                tokio::time::sleep(HELD_FOR).await;
                self.maintenance(i, false).await;
                self.note("push maintenance: off".to_owned());
            }
        }
    }

    /// After the run: does node C's spool take a push again now that its disk has room?
    /// With push maintenance on, one push through node C must answer `buffered`. Answers
    /// what it did answer (`None` without a small disk).
    pub async fn probe_spool(&self, queue: &str) -> Option<String> {
        self.disk.as_ref()?;
        self.maintenance(SMALL_DISK_NODE, true).await;
        let node = self.cluster.node(SMALL_DISK_NODE);
        let body = json!({ "items": [{ "queue": queue, "partition": "probe",
            "payload": { "id": "probe" }, "transactionId": "probe" }] });
        let answer = node
            .http
            .post(node.url_of("/api/v1/push"))
            .json(&body)
            .send()
            .await;
        let said = match answer {
            Ok(response) => {
                let status = response.status();
                let text = response.text().await.unwrap_or_default();
                format!("{status} {text}")
            }
            Err(e) => format!("no answer: {e}"),
        };
        self.maintenance(SMALL_DISK_NODE, false).await;
        Some(said)
    }

    /// Switches push maintenance through node `i`, retrying until it is answered 200.
    async fn maintenance(&self, i: usize, on: bool) {
        let node = self.cluster.node(i);
        let url = node.url_of("/api/v1/system/maintenance");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let sent = node
                .http
                .post(&url)
                .json(&json!({ "push": on }))
                .send()
                .await;
            if sent.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "push maintenance {on} was never accepted by node {}",
                node.id
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Cuts the mesh between two nodes: each node runs in a cgroup v2 folder of its own, and an
/// `iptables` rule drops what one node's sockets send to the other's mesh port.
pub struct MeshCutter {
    root: PathBuf,
    groups: Vec<String>,
    rules: Vec<Vec<String>>,
}

impl MeshCutter {
    /// Cgroups for `n` nodes, or why a cut cannot be made on this machine.
    pub fn new(n: usize) -> Result<Self, String> {
        let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.join("cgroup.procs").exists() && p.join("cgroup.controllers").exists())
            .ok_or("no cgroup v2 hierarchy")?;
        let groups: Vec<String> = (0..n)
            .map(|i| format!("queen-fault-{}-{i}", std::process::id()))
            .collect();
        let cutter = MeshCutter {
            root,
            groups,
            rules: Vec::new(),
        };
        for g in &cutter.groups {
            std::fs::create_dir_all(cutter.root.join(g))
                .map_err(|e| format!("cannot create cgroup {g}: {e}"))?;
        }
        // A rule that matches nothing, added and removed: iptables and its cgroup match work.
        let probe = cutter.rule(0, 1);
        iptables("-I", &probe)?;
        iptables("-D", &probe)?;
        Ok(cutter)
    }

    /// Node `i`'s cgroup folder (for [`super::super::cluster::Options::in_cgroup`]).
    pub fn cgroup(&self, i: usize) -> PathBuf {
        self.root.join(&self.groups[i])
    }

    fn rule(&self, from: usize, port: u16) -> Vec<String> {
        let rule = format!(
            "OUTPUT -o lo -p tcp --dport {port} -m cgroup --path {} -j DROP",
            self.groups[from]
        );
        rule.split(' ').map(str::to_owned).collect()
    }

    /// Drops what node `i` sends to `j`'s mesh port and what `j` sends to `i`'s.
    pub fn cut(&mut self, i: usize, j: usize, mesh_i: u16, mesh_j: u16) {
        for rule in [self.rule(i, mesh_j), self.rule(j, mesh_i)] {
            iptables("-I", &rule).expect("add a cut rule");
            self.rules.push(rule);
        }
    }

    /// Removes every cut rule.
    pub fn heal(&mut self) {
        for rule in self.rules.drain(..) {
            if let Err(e) = iptables("-D", &rule) {
                eprintln!("could not remove the cut rule {rule:?}: {e}");
            }
        }
    }
}

impl Drop for MeshCutter {
    fn drop(&mut self) {
        self.heal();
        for g in &self.groups {
            let _ = std::fs::remove_dir(self.root.join(g));
        }
    }
}

fn iptables(action: &str, rule: &[String]) -> Result<(), String> {
    let (chain, rest) = rule.split_first().expect("a chain");
    let out = Command::new("iptables")
        .args(["-w", action, chain])
        .args(rest)
        .output()
        .map_err(|e| format!("cannot run iptables: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "iptables {action} {rule:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A small tmpfs for one node's spool, which the nemesis fills with a file and empties.
pub struct SmallDisk {
    mount: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `megabytes` under /tmp, or says why it cannot.
    pub fn mount(megabytes: u32) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("queen-fault-disk-")
            .tempdir_in("/tmp")
            .map_err(|e| format!("no folder: {e}"))?
            .keep();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir(&dir);
            return Err(format!(
                "mount a tmpfs: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(SmallDisk { mount: dir })
    }

    /// The spool folder on it.
    pub fn spool_dir(&self) -> PathBuf {
        self.mount.join("spool")
    }

    fn filler(&self) -> PathBuf {
        self.mount.join("filler")
    }

    /// Writes a file until the disk is full; answers the bytes written.
    pub fn fill(&self) -> u64 {
        fill_file(&self.filler())
    }

    /// Removes the file.
    pub fn empty(&self) {
        let _ = std::fs::remove_file(self.filler());
    }
}

fn fill_file(path: &Path) -> u64 {
    use std::io::Write;
    let mut file = std::fs::File::create(path).expect("create the filler");
    let chunk = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    loop {
        match file.write(&chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => written += n as u64,
        }
    }
    let _ = file.sync_all();
    written
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
        let _ = std::fs::remove_dir_all(&self.mount);
    }
}

//! Pods on one machine: each a network namespace with its own address on a private bridge,
//! as pods have on a cluster network, running one container of the image with
//! `buildah run`. The bridge sits in a namespace of its own, so the machine's firewall never
//! sees pod traffic; the test reaches the pods through one veth of the machine's. A pod's
//! `/etc/hosts` comes from `/etc/netns/<namespace>/hosts` (what `ip netns exec` mounts),
//! standing in for the cluster DNS. Everything is removed on drop.

use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::buildah::{buildah, buildah_output};

/// The private network the pods share: a bridge in its own namespace, and the machine's
/// way in.
pub struct Lan {
    tag: String,
    prefix: [u8; 3],
}

impl Lan {
    /// A network for this test process: names and a 10.x.y.0/24 subnet from its pid, so
    /// parallel test processes never share either. (The value exists before its parts,
    /// so a failing step still removes what was made.)
    pub fn new() -> Self {
        let pid = std::process::id();
        let lan = Lan {
            tag: format!("qi{pid}"),
            prefix: [10, (pid >> 8) as u8, pid as u8],
        };
        let (ns, host_if) = (lan.netns(), lan.host_if());
        ip(&["netns", "add", &ns]);
        ip(&["-n", &ns, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &ns, "link", "set", "br0", "up"]);
        ip(&[
            "link", "add", &host_if, "type", "veth", "peer", "name", "up0", "netns", &ns,
        ]);
        ip(&["-n", &ns, "link", "set", "up0", "master", "br0", "up"]);
        let host = format!("{}/24", lan.address(1));
        ip(&["addr", "add", &host, "dev", &host_if]);
        ip(&["link", "set", &host_if, "up"]);
        lan
    }

    /// The address `.host` of the subnet (1 is the machine's side).
    pub fn address(&self, host: u8) -> Ipv4Addr {
        let [a, b, c] = self.prefix;
        Ipv4Addr::new(a, b, c, host)
    }

    /// The address pod `index` gets.
    pub fn pod_address(&self, index: u8) -> Ipv4Addr {
        self.address(10 + index)
    }

    /// A new pod at [`Lan::pod_address`], named `name`, whose `/etc/hosts` is `hosts`.
    pub fn pod(&self, index: u8, name: &str, hosts: &str) -> Pod {
        let netns = format!("{}-{index}", self.tag);
        let outside = format!("{}p{index}", self.tag);
        let log =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("target/tmp/image/{netns}.log"));
        // The pod exists before its parts, so a failing step still removes what was made.
        let pod = Pod {
            name: name.to_owned(),
            address: self.pod_address(index),
            netns: netns.clone(),
            container: None,
            child: None,
            main: None,
            log,
        };
        ip(&["netns", "add", &netns]);
        let lan = self.netns();
        ip(&[
            "link", "add", &outside, "netns", &lan, "type", "veth", "peer", "name", "eth0",
            "netns", &netns,
        ]);
        ip(&["-n", &lan, "link", "set", &outside, "master", "br0", "up"]);
        let cidr = format!("{}/24", pod.address);
        ip(&["-n", &netns, "addr", "add", &cidr, "dev", "eth0"]);
        ip(&["-n", &netns, "link", "set", "eth0", "up"]);
        ip(&["-n", &netns, "link", "set", "lo", "up"]);
        let gateway = self.address(1).to_string();
        ip(&["-n", &netns, "route", "add", "default", "via", &gateway]);
        let etc = PathBuf::from("/etc/netns").join(&netns);
        fs::create_dir_all(&etc).expect("make /etc/netns/<pod>");
        fs::write(etc.join("hosts"), hosts).expect("write the pod's hosts file");
        pod
    }

    fn netns(&self) -> String {
        format!("{}-lan", self.tag)
    }

    fn host_if(&self) -> String {
        format!("{}h", self.tag)
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns()])
            .output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if()])
            .output();
    }
}

/// One pod: a network namespace and, once started, one container in it.
pub struct Pod {
    /// The pod's name (the downward API's `metadata.name`).
    pub name: String,
    /// The pod's address on the private network.
    pub address: Ipv4Addr,
    netns: String,
    container: Option<String>,
    child: Option<Child>,
    /// The name (`comm`) of the container's main process, once started.
    main: Option<String>,
    log: PathBuf,
}

impl Pod {
    /// Creates the pod's container from `image` (its root file system, copied).
    pub fn create(&mut self, image: &str) {
        let container = format!("queen-{}", self.netns);
        buildah_output(&["from", "--pull=never", "--name", &container, image]);
        self.container = Some(container);
    }

    /// Starts `argv` in the container as `user` with `env`, as the kubelet would: the pod's
    /// network, a fresh `/tmp` (the chart's emptyDir), output to a log file. Returns when
    /// the process is started.
    pub fn start(&mut self, user: &str, env: &[(String, String)], argv: &[String]) {
        let log = fs::File::create(&self.log).expect("make the pod's log file");
        let mut command = self.run(user);
        for (name, value) in env {
            command.args(["--env", &format!("{name}={value}")]);
        }
        command.arg(self.container()).arg("--").args(argv);
        let program = Path::new(&argv[0]).file_name().expect("a program name");
        // The kernel keeps the first 15 bytes of a process name.
        let comm: String = program.to_string_lossy().chars().take(15).collect();
        self.main = Some(comm);
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("share the log file"))
            .stderr(log)
            .spawn()
            .expect("start buildah run");
        self.child = Some(child);
    }

    /// Runs `argv` in the running pod's container as `user` (a preStop exec hook) and
    /// waits for it.
    pub fn exec(&self, user: &str, argv: &[String]) -> ExitStatus {
        let mut command = self.run(user);
        command.arg(self.container()).arg("--").args(argv);
        command
            .stdin(Stdio::null())
            .status()
            .expect("buildah run starts")
    }

    /// `buildah run` in the pod's network namespace, as `user`, with `/tmp` a tmpfs.
    fn run(&self, user: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.netns]);
        let buildah = buildah();
        command.arg(buildah.get_program()).args(buildah.get_args());
        command.args(["run", "--isolation", "chroot", "--network", "host"]);
        command.args(["--user", user]);
        command.args(["--mount", "type=tmpfs,destination=/tmp"]);
        command
    }

    fn container(&self) -> &str {
        self.container
            .as_deref()
            .expect("the pod's container is created before it runs")
    }

    /// Sends SIGTERM to the container's main process (what the kubelet does; buildah's own
    /// processes take it as a failure) and waits for the container to end, killing every
    /// process of the pod after `grace`. Answers how it ended.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        self.signal(libc::SIGTERM, self.main.as_deref());
        let deadline = Instant::now() + grace;
        let status = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break Some(status);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if status.is_none() {
            self.signal(libc::SIGKILL, None);
            let _ = child.kill();
            let _ = child.wait();
        }
        status
    }

    /// The last lines the container wrote.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Sends a signal to the processes in the pod's network namespace named `only`, or to
    /// all of them.
    fn signal(&self, signal: i32, only: Option<&str>) {
        let Ok(out) = Command::new("ip")
            .args(["netns", "pids", &self.netns])
            .output()
        else {
            return;
        };
        for pid in String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
            .filter(|pid| {
                let Some(name) = only else { return true };
                fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|comm| comm.trim_end() == name)
            })
        {
            // SAFETY: kill has no memory effects; a pid that is gone answers ESRCH.
            unsafe { libc::kill(pid, signal) };
        }
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- pod {} ({}) log ----\n{}",
                self.name,
                self.address,
                self.log_tail(40)
            );
        }
        self.stop(Duration::from_secs(10));
        if let Some(container) = self.container.take() {
            let _ = buildah().args(["rm", &container]).output();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns])
            .output();
        let _ = fs::remove_dir_all(PathBuf::from("/etc/netns").join(&self.netns));
        let _ = fs::remove_file(&self.log);
    }
}

/// Runs `ip` and panics with its error when it fails.
fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("ip runs (apt-get install iproute2)");
    assert!(
        out.status.success(),
        "ip {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

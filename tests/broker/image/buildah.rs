//! buildah on the repository's own storage (vfs driver, under `target/tmp/buildah`, so
//! nothing leaves the checkout), and the image the tests start: the Containerfile's
//! `prebuilt` target holding the broker cargo built for this test binary. How pods run it
//! is `pod.rs`'s business.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The runtime stage's base: what debian:bookworm-slim is, made by
/// `cluster/image/make-base.sh` from Debian packages and kept in the storage between runs.
pub const BASE: &str = "localhost/queen-base:bookworm-slim";
/// The base plus this machine's CA bundle: the toolchain stage's stand-in, whose only use
/// in a `prebuilt` build is to provide that bundle.
pub const CA_BASE: &str = "localhost/queen-base:bookworm-slim-ca";

/// `buildah` with the repository's storage; every call of the tests goes through it.
pub fn buildah() -> Command {
    let mut command = Command::new("buildah");
    command
        .arg("--root")
        .arg(storage().join("storage"))
        .arg("--runroot")
        .arg(storage().join("run"))
        .args(["--storage-driver", "vfs"]);
    command
}

/// Runs buildah and returns its standard output; panics with its error output if it fails.
pub fn buildah_output(args: &[&str]) -> String {
    let out = buildah()
        .args(args)
        .output()
        .expect("buildah runs (apt-get install buildah)");
    assert!(
        out.status.success(),
        "buildah {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An image of this test process (its own tag, so parallel test processes never collide),
/// removed on drop.
pub struct Image {
    /// Its name in the storage.
    pub name: String,
    /// Its size as buildah reports it (the uncompressed layers).
    pub size: String,
    /// How long making the base (when missing) and the build took.
    pub build_time: Duration,
    /// The image's configuration (`Entrypoint`, `Cmd`, `User`, `Env`, `ExposedPorts`).
    pub config: Value,
}

impl Image {
    /// Builds the Containerfile's `prebuilt` target with `binary` (stripped of symbols, as a
    /// release build's image would be small) on the mmdebstrap base.
    pub fn build_prebuilt(binary: &Path) -> Self {
        let began = Instant::now();
        make_base();
        let pid = std::process::id();
        let context = repo_root().join(format!("target/tmp/image/context-{pid}"));
        let _ = fs::remove_dir_all(&context);
        fs::create_dir_all(&context).expect("make the build context");
        let stripped = Command::new("objcopy")
            .arg("--strip-all")
            .arg(binary)
            .arg(context.join("queen"))
            .status()
            .expect("objcopy runs (apt-get install binutils)");
        assert!(stripped.success(), "objcopy --strip-all failed");
        let name = format!("localhost/queen-test:{pid}");
        let containerfile = repo_root().join("Containerfile");
        let out = buildah()
            .args(["bud", "--isolation", "chroot", "--layers", "--force-rm"])
            .args(["--pull=never", "--target", "prebuilt", "--quiet"])
            .args(["--build-arg", &format!("RUST_IMAGE={CA_BASE}")])
            .args(["--build-arg", &format!("RUNTIME_IMAGE={BASE}")])
            .args(["--build-arg", "QUEEN_BINARY=queen"])
            .arg("-f")
            .arg(&containerfile)
            .args(["-t", &name])
            .arg(&context)
            .output()
            .expect("buildah bud runs");
        let _ = fs::remove_dir_all(&context);
        assert!(
            out.status.success(),
            "buildah bud failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let inspect: Value =
            serde_json::from_str(&buildah_output(&["inspect", "--type", "image", &name]))
                .expect("buildah inspect answers JSON");
        let size = buildah_output(&["images", "--format", "{{.Size}}", &name])
            .trim()
            .to_owned();
        Image {
            name,
            size,
            build_time: began.elapsed(),
            config: inspect["OCIv1"]["config"].clone(),
        }
    }

    /// The image's `Entrypoint` and `Cmd`.
    pub fn entrypoint_and_cmd(&self) -> (Vec<String>, Vec<String>) {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        };
        (
            strings(&self.config["Entrypoint"]),
            strings(&self.config["Cmd"]),
        )
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = buildah().args(["rmi", "-f", &self.name]).output();
    }
}

/// The folder of buildah's storage and run state.
pub fn storage() -> PathBuf {
    repo_root().join("target/tmp/buildah")
}

/// Makes the two base images unless the storage has them (the script keeps the mmdebstrap
/// tarball under `target/tmp/image`, and waits for a parallel run making them).
fn make_base() {
    let out = Command::new("bash")
        .arg(repo_root().join("cluster/image/make-base.sh"))
        .args([BASE, CA_BASE])
        .env("QUEEN_BUILDAH_ROOT", storage().join("storage"))
        .env("QUEEN_BUILDAH_RUNROOT", storage().join("run"))
        .env("QUEEN_IMAGE_CACHE", repo_root().join("target/tmp/image"))
        .output()
        .expect("bash runs cluster/image/make-base.sh");
    assert!(
        out.status.success(),
        "cluster/image/make-base.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

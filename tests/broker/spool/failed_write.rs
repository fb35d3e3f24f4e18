//! A spool write that fails: the disk under the spool fills up in the middle of a group
//! commit, every push of that batch is answered 503, and none of them is stored by the
//! replay, not even one whose record reached the file whole before the failed write.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::{push, read_partition, wait_replayed};
use crate::support::TestBroker;

/// A small ext4 file system on a loop device, its image on the real disk (so an `fsync`
/// takes a real flush and records arriving meanwhile share one batch), mounted on a fresh
/// folder and unmounted when dropped; `None` where this process may not make or mount one
/// (not root, or no loop devices in the container).
struct SmallDisk {
    image: tempfile::TempDir,
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<Self> {
        let image = tempfile::Builder::new()
            .prefix("queen-disk-image-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .ok()?;
        let dir = tempfile::Builder::new()
            .prefix("queen-small-disk-")
            .tempdir()
            .ok()?;
        let file = image.path().join("disk.img");
        let run = |cmd: &mut Command| cmd.status().is_ok_and(|s| s.success());
        let made = run(Command::new("truncate").args(["-s", size]).arg(&file))
            && run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&file))
            && run(Command::new("mount")
                .args(["-o", "loop"])
                .arg(&file)
                .arg(dir.path()));
        made.then_some(SmallDisk { image, dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazily: a broker that a failed assertion left running may still hold a file.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
        let _ = &self.image;
    }
}

/// The spool on a 2 MB disk whose most is taken by a ballast file, the byte cap far above
/// the disk: pushes fill it soon, and removing the ballast frees it again.
struct BallastedSpool {
    disk: SmallDisk,
    ballast: std::path::PathBuf,
}

impl BallastedSpool {
    fn mount() -> Option<Self> {
        let disk = SmallDisk::mount("2M")?;
        let ballast = disk.dir.path().join("ballast");
        std::fs::write(&ballast, vec![1u8; 512 * 1024]).expect("the ballast fits");
        Some(BallastedSpool { disk, ballast })
    }

    /// The broker's settings for this spool.
    fn vars(&self) -> [(&str, &str); 3] {
        [
            (
                "FILE_BUFFER_DIR",
                self.disk.dir.path().to_str().expect("a UTF-8 path"),
            ),
            ("FILE_BUFFER_MAX_BYTES", "104857600"),
            ("QUEEN_HTTP_WORKERS", "4"),
        ]
    }

    fn free_the_ballast(&self) {
        std::fs::remove_file(&self.ballast).expect("the ballast goes");
    }
}

/// Switches push maintenance, so pushes go to the spool (or stop going there).
async fn push_maintenance(b: &TestBroker, on: bool) {
    let (status, body) = b
        .post("/api/v1/system/maintenance", &json!({"push": on}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Concurrent pushes fill the disk under the spool for a moment: after a restart on the
/// same spool, what was answered `buffered` is stored once each, and nothing answered 503.
#[actix_rt::test]
async fn a_push_answered_503_when_the_spool_disk_fills_is_never_replayed() {
    // Arrange: the spool on a disk much smaller than its byte cap, push maintenance on.
    let Some(spool) = BallastedSpool::mount() else {
        eprintln!("skipped: this process cannot mount a loop file system");
        return;
    };
    let vars = spool.vars();
    let b = TestBroker::start_with(&vars).await;
    let queue = "spool-disk";
    push_maintenance(&b, true).await;

    // Act: rounds of 64 concurrent pushes of 3 KB each until the disk has failed some.
    let filler = "x".repeat(3 * 1024);
    let (mut buffered, mut failed) = (BTreeSet::new(), BTreeSet::new());
    let mut n = 0u64;
    while failed.is_empty() {
        assert!(n < 2_000, "the small disk never failed a write");
        let round: Vec<_> = (n..n + 64)
            .map(|i| {
                let (http, base) = (b.http.clone(), b.base.clone());
                let item = json!({"queue": queue, "partition": "p",
                                  "payload": {"n": i, "fill": filler}});
                tokio::spawn(async move { (i, push(&http, &base, &[item]).await) })
            })
            .collect();
        for task in round {
            let (i, (status, body)) = task.await.expect("the push task");
            match status {
                StatusCode::CREATED => assert!(buffered.insert(i), "{body}"),
                StatusCode::SERVICE_UNAVAILABLE => {
                    let text = body["error"].as_str().unwrap_or_default();
                    assert!(text.contains("could not write"), "{body}");
                    failed.insert(i);
                }
                other => panic!("push {i} answered {other}: {body}"),
            }
        }
        n += 64;
    }
    // ... then the broker stops, the ballast goes, and a broker starts on the same spool:
    // its replay reads every file to its end.
    let pg = b.pg.clone();
    b.stop().await;
    spool.free_the_ballast();
    let b = TestBroker::start_on(pg, &vars).await;
    push_maintenance(&b, false).await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(60)).await;

    // Assert
    let got = read_partition(&b.http, &b.base, queue, "p").await;
    let stored: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(stored.len(), got.len(), "a message stored twice: {got:?}");
    let replayed_failures: Vec<_> = stored.intersection(&failed).collect();
    assert!(
        replayed_failures.is_empty(),
        "answered 503 and stored: {replayed_failures:?}"
    );
    assert_eq!(
        stored, buffered,
        "stored: exactly what was answered buffered"
    );
    b.stop().await;
    drop(spool);
}

/// A spool whose disk filled takes pushes again, without a restart, once space is free:
/// the file it could not start (its header did not fit) does not stay in the way of the
/// next one.
#[actix_rt::test]
async fn a_spool_whose_disk_filled_takes_pushes_again_once_space_is_free() {
    // Arrange: the spool on a small disk, most of it ballast, push maintenance on.
    let Some(spool) = BallastedSpool::mount() else {
        eprintln!("skipped: this process cannot mount a loop file system");
        return;
    };
    let b = TestBroker::start_with(&spool.vars()).await;
    let queue = "spool-refilled";
    push_maintenance(&b, true).await;

    // ... pushes until the disk refuses one, then a few more while it is still full.
    let filler = "x".repeat(3 * 1024);
    let item =
        |i: u64| json!({"queue": queue, "partition": "p", "payload": {"n": i, "fill": filler}});
    let mut buffered = BTreeSet::new();
    let mut i = 0u64;
    loop {
        assert!(i < 2_000, "the small disk never failed a write");
        let (status, body) = push(&b.http, &b.base, &[item(i)]).await;
        match status {
            StatusCode::CREATED => assert!(buffered.insert(i), "{body}"),
            StatusCode::SERVICE_UNAVAILABLE => break,
            other => panic!("push {i} answered {other}: {body}"),
        }
        i += 1;
    }
    for k in 1..=3 {
        let (status, body) = push(&b.http, &b.base, &[item(i + k)]).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    }

    // Act: the ballast goes; the next pushes find room.
    spool.free_the_ballast();
    let after: Vec<u64> = (i + 10..i + 15).collect();
    for &n in &after {
        let (status, body) = push(&b.http, &b.base, &[item(n)]).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "push {n} once space was free: {body}"
        );
        buffered.insert(n);
    }

    // Assert: the replay stores exactly what was answered buffered, in order.
    push_maintenance(&b, false).await;
    wait_replayed(&b.http, &b.base, Duration::from_secs(60)).await;
    let got = read_partition(&b.http, &b.base, queue, "p").await;
    assert_eq!(got, buffered.iter().copied().collect::<Vec<_>>());
    b.stop().await;
    drop(spool);
}

//! The real binary refuses to expose an unauthenticated mesh: bound to a non-loopback
//! address without `QUEEN_MESH_SECRET`, it exits at once naming the variable, before it
//! touches a database, unless `QUEEN_MESH_INSECURE` says otherwise.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::support::free_port;

/// Without a secret on 0.0.0.0 the broker exits with the config error; with the explicit
/// insecure switch it gets past the config and starts (and is stopped here).
#[test]
fn the_binary_refuses_a_mesh_on_every_interface_without_a_secret() {
    // Arrange: a database nobody listens on, so a broker past its config keeps retrying.
    let port = free_port().to_string();
    let run = |extra: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_queen"));
        command
            .env_clear()
            .env("QUEEN_MESH_BIND_ADDR", "0.0.0.0")
            .env("QUEEN_MESH_PORT", "0")
            .env("PORT", &port)
            .env("PG_HOST", "127.0.0.1")
            .env("PG_PORT", "1")
            .env("QUEEN_POOL_TIMEOUT_MS", "60000")
            .envs(extra.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.spawn().expect("the broker binary starts")
    };

    // Act
    let refused = run(&[])
        .wait_with_output()
        .expect("the refused broker exits");
    let mut insecure = run(&[("QUEEN_MESH_INSECURE", "1")]);
    // Its "starting" line comes once the config is accepted; a refusal ends the output.
    let output = insecure.stdout.take().expect("piped stdout");
    let accepted = BufReader::new(output)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("starting"));
    let _ = insecure.kill();
    let _ = insecure.wait();

    // Assert
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("QUEEN_MESH_SECRET"), "{stderr}");
    assert!(
        accepted,
        "with QUEEN_MESH_INSECURE the config was refused too"
    );
}

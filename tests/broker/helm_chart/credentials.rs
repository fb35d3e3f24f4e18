//! Where the brokers' database settings and secrets come from: the chart's Secret, an
//! existing Secret under configured keys, a connection string, or the bundled PostgreSQL.
//! The values check that refuses a release without a database lives here too.

use super::render::{self, container, selects, text, EnvSource};
use super::FULLNAME;

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
    let annotations = &r.brokers()["spec"]["template"]["metadata"]["annotations"];
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
    // The server flushes whenever its WAL writer writes (README, "Leased pops and acks").
    assert_eq!(
        server["args"],
        serde_json::json!([
            "-c",
            "max_connections=200",
            "-c",
            "wal_writer_flush_after=0"
        ])
    );

    let broker_pods = &r.brokers()["spec"]["template"]["metadata"]["labels"];
    let pg_pods = &pg["spec"]["template"]["metadata"]["labels"];
    assert!(selects(&pg_service["spec"]["selector"], pg_pods));
    assert!(!selects(&pg_service["spec"]["selector"], broker_pods));
    let peers = r.named("Service", &format!("{FULLNAME}-peers"));
    assert!(!selects(&peers["spec"]["selector"], pg_pods));
    let init = &r.brokers()["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(init["name"], "wait-for-postgresql");
}

fn secret_ref(name: &str, key: &str) -> EnvSource {
    EnvSource::Secret {
        name: name.to_owned(),
        key: key.to_owned(),
    }
}

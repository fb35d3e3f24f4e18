//! The documents the code cites are in the repository: every "contract §N.N" and
//! "decision 9.N" a source comment names has its section in `docs/wire-protocol.md`,
//! "the seed" is `docs/pop.md`, and every `sql/` file or folder a source, a test or a
//! document names exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources(dir: &Path, out: &mut Vec<String>) {
    files(dir, &["rs", "sql"], &mut |_, text| out.push(text));
}

/// Calls `each` with the path and text of every file under `dir` with one of `extensions`.
fn files(dir: &Path, extensions: &[&str], each: &mut dyn FnMut(&Path, String)) {
    for entry in std::fs::read_dir(dir).expect("readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, extensions, each);
        } else if path
            .extension()
            .is_some_and(|e| extensions.iter().any(|x| e == *x))
        {
            each(&path, std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
}

/// The `sql/...` paths `text` names: a word starting with `sql/` (not the tail of a longer
/// path or word such as a metric label `/sql/list` or `postgresql/`), up to the first
/// character a path does not hold, without a trailing full stop; patterns (`NNN_*`) are
/// left out.
fn sql_paths(text: &str) -> Vec<String> {
    text.match_indices("sql/")
        .filter(|(at, _)| {
            text[..*at]
                .chars()
                .next_back()
                .map_or(true, |c| !(c.is_alphanumeric() || "/_-".contains(c)))
        })
        .map(|(at, _)| {
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_-./*".contains(*c))
                .collect();
            path.trim_end_matches('.').to_owned()
        })
        .filter(|p| !p.contains('*') && !p.contains("NNN"))
        .collect()
}

/// The `N.N` numbers following `marker` in `text`.
fn cited(text: &str, marker: &str) -> Vec<String> {
    text.match_indices(marker)
        .filter_map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            let n: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let n = n.trim_end_matches('.').to_owned();
            n.contains('.').then_some(n)
        })
        .collect()
}

#[test]
fn every_contract_section_and_decision_the_code_cites_is_in_docs() {
    let mut texts = Vec::new();
    sources(&root().join("src"), &mut texts);
    sources(&root().join("sql"), &mut texts);
    let protocol = std::fs::read_to_string(root().join("docs/wire-protocol.md"))
        .expect("docs/wire-protocol.md exists");
    let mut missing = Vec::new();
    for text in &texts {
        for section in cited(text, "§") {
            if !protocol.contains(&format!("### {section} ")) {
                missing.push(format!("§{section}"));
            }
        }
        for decision in cited(text, "decision ") {
            let item = decision.trim_start_matches("9.");
            if !decision.starts_with("9.") || !protocol.contains(&format!("\n{item}. ")) {
                missing.push(format!("decision {decision}"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "cited but not documented in docs/: {missing:?}"
    );
    let seed = root().join("docs/pop.md");
    assert!(seed.is_file(), "the seed the code cites is docs/pop.md");
}

#[test]
fn every_sql_path_a_source_test_or_document_names_exists() {
    let mut missing = Vec::new();
    let mut named = 0;
    let mut check = |path: &Path, text: String| {
        // The upgrade test's fixture is an old release's files, paths and all; the baseline
        // is frozen (its checksum is recorded in every database), so its comments name the
        // function files of the release that froze it, some dropped since by a migration.
        if path.starts_with(root().join("tests/broker/upgrade"))
            || path == root().join("sql/migrations/064_baseline.sql")
        {
            return;
        }
        for cited in sql_paths(&text) {
            named += 1;
            if !root().join(&cited).exists() {
                missing.push(format!("{}: {cited}", path.display()));
            }
        }
    };
    for dir in [
        "src", "sql", "tests", "docs", "bench", "benches", "helm", "cluster",
    ] {
        files(
            &root().join(dir),
            &["rs", "sql", "md", "sh", "yaml", "tpl"],
            &mut check,
        );
    }
    for doc in ["README.md", "BENCHMARKS.md"] {
        let path = root().join(doc);
        check(
            &path,
            std::fs::read_to_string(&path).expect("readable document"),
        );
    }
    assert!(
        named > 20,
        "only {named} sql/ paths found: the scan is broken"
    );
    missing.sort();
    assert!(
        missing.is_empty(),
        "sql/ paths named but not in the repository: {missing:#?}"
    );
}

#[test]
fn sql_paths_are_read_whole_and_labels_are_not_paths() {
    let text = "see `sql/functions/log_pop_v3.sql`. Also sql/migrations/, a label \
                /sql/list, postgresql/data and sql/migrations/NNN_*.sql.";
    assert_eq!(
        sql_paths(text),
        vec!["sql/functions/log_pop_v3.sql", "sql/migrations/"]
    );
}

//! The documents the code cites are in the repository: every "contract §N.N" and
//! "decision 9.N" a source comment names has its section in `docs/wire-protocol.md`, and
//! "the seed" is `docs/pop.md`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "sql") {
            out.push(std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
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

//! Which node owns an ephemeral queue: rendezvous (highest random weight) hashing of the
//! queue over the mesh members (this node and its connected peers,
//! `crate::mesh::Mesh::members`). Every node with the same view picks the same owner
//! without talking; when a member leaves, only its queues move, each to the member with
//! the next-highest weight, and start there empty.

use sha2::{Digest, Sha256};

/// The weight of `node` for `(tenant, queue)`.
fn weight(node: &str, tenant: &str, queue: &str) -> u64 {
    let mut hash = Sha256::new();
    for part in [node, tenant, queue] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// The owner of `(tenant, queue)` among `members` (`None` only when there are none).
pub fn owner<'a>(members: &'a [String], tenant: &str, queue: &str) -> Option<&'a str> {
    members
        .iter()
        .max_by_key(|node| (weight(node, tenant, queue), node.as_str()))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_leaving_member_moves_only_its_own_queues() {
        let all = nodes(&["a", "b", "c"]);
        let without_b = nodes(&["a", "c"]);
        let mut owned = [0; 3];
        for q in 0..300 {
            let queue = format!("q{q}");
            let before = owner(&all, "", &queue).unwrap();
            let after = owner(&without_b, "", &queue).unwrap();
            if before != "b" {
                assert_eq!(before, after, "{queue} moved though its owner stayed");
            }
            owned[(before.as_bytes()[0] - b'a') as usize] += 1;
        }
        assert!(owned.iter().all(|&n| n > 50), "spread: {owned:?}");
        assert_eq!(owner(&[], "", "q"), None);
    }
}

//! The spool's own tests: records across a reopen, a torn tail, the cap.

use std::io::Write;

use super::*;
use crate::domain::{PartitionName, QueueName};

fn config(dir: &Path, max_bytes: u64) -> SpoolConfig {
    SpoolConfig {
        dir: dir.to_owned(),
        dir_given: true,
        max_bytes,
    }
}

fn items(partition: &str, n: usize) -> Vec<PushItem> {
    (0..n)
        .map(|i| PushItem {
            queue: QueueName::parse("q").unwrap(),
            partition: PartitionName::parse(partition).unwrap(),
            payload: format!("{{\"i\":{i}}}").into_bytes(),
            transaction_id: None,
            trace_id: None,
            producer: None,
        })
        .collect()
}

async fn append(spool: &Spool, items: &[PushItem]) -> Result<(), SpoolError> {
    let ids: Vec<Uuid> = items.iter().map(|_| Uuid::now_v7()).collect();
    let txns: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    spool
        .append(&Tenant::default_tenant(), items, &ids, &txns)
        .await
}

#[tokio::test]
async fn records_survive_a_reopen_and_a_torn_tail_after_them_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(&config(dir.path(), 1 << 20)).unwrap();
    append(&spool, &items("a", 3)).await.unwrap();
    append(&spool, &items("b", 2)).await.unwrap();
    let tenant = Tenant::default_tenant();
    assert!(spool.holds_any(&tenant, &items("a", 1)));
    assert!(!spool.holds_any(&tenant, &items("c", 1)));
    spool.close();
    drop(spool);
    // A crash in the middle of a third record.
    let newest = *files::list(dir.path()).unwrap().last().unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(files::path(dir.path(), newest))
        .unwrap();
    file.write_all(&[40, 0, 0, 0, 1, 2, 3]).unwrap();
    drop(file);

    let spool = Spool::open(&config(dir.path(), 1 << 20)).unwrap();
    assert_eq!(spool.pending_records(), 2);
    assert!(spool.holds_any(&tenant, &items("b", 1)));
    append(&spool, &items("c", 1)).await.unwrap();
    assert_eq!(spool.pending_records(), 3);
}

#[tokio::test]
async fn a_push_past_the_cap_is_refused_and_counts_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(&config(dir.path(), 400)).unwrap();
    append(&spool, &items("a", 2)).await.unwrap();
    let refused = append(&spool, &items("b", 20)).await;
    assert!(matches!(refused, Err(SpoolError::Full { max_bytes: 400 })));
    assert_eq!(spool.pending_records(), 1);
    assert!(!spool.holds_any(&Tenant::default_tenant(), &items("b", 1)));
}

//! Push → delivery to a parked consumer: one consumer keeps a waiting pop (`wait=true`,
//! `autoAck`) on a queue; one producer pushes one message at a time, each after the
//! consumer has had time to park again, and the time from the push's send to the pop's
//! answer is the message's latency. Producer and consumer may call different nodes.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::sync::mpsc;

use super::client::{payload, seq_of, Client};
use crate::stats::Latency;

/// How long the producer lets the consumer park again before the next push.
const REPARK: Duration = Duration::from_millis(5);

/// Times `samples` messages pushed through `producer_base` to a consumer parked on
/// `consumer_base`, both on `queue`.
pub async fn run(
    producer_base: &str,
    consumer_base: &str,
    queue: &str,
    samples: u64,
) -> anyhow::Result<Latency> {
    let producer = Client::new(producer_base)?;
    let consumer = Client::new(consumer_base)?;
    let origin = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel::<(u64, u64)>();
    let parked = {
        let queue = queue.to_owned();
        tokio::spawn(async move {
            loop {
                let popped = consumer.pop(&queue, 1, Some(5000), true).await?;
                let at = origin.elapsed().as_micros() as u64;
                for m in popped {
                    let seq = seq_of(&m.payload).context("a popped payload has no stamp")?;
                    if tx.send((seq, at)).is_err() {
                        return anyhow::Ok(());
                    }
                }
                if tx.is_closed() {
                    return Ok(());
                }
            }
        })
    };
    let mut micros = Vec::with_capacity(samples as usize);
    let outcome = async {
        for seq in 0..samples {
            tokio::time::sleep(REPARK).await;
            let sent = origin.elapsed().as_micros() as u64;
            producer.push(queue, &[payload(seq, 16)]).await?;
            let (got, at) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .context("a pushed message did not reach the parked consumer in 10 s")?
                .context("the consumer stopped")?;
            if got != seq {
                bail!("the consumer got message {got} while {seq} was expected");
            }
            micros.push(at.saturating_sub(sent));
        }
        anyhow::Ok(())
    }
    .await;
    drop(rx);
    parked.abort();
    outcome?;
    Latency::from_micros(&mut micros).context("no latency sample")
}

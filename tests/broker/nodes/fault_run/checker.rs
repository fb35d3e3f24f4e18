//! The fault run's checker: reads every push answer and every delivery of the [`History`]
//! and counts, per reader (queue mode, `g1`, `g2`), messages answered as stored and never
//! delivered, duplicates (explained by a failed ack or a lease that ran out, or not), and
//! per-partition order violations; and over all readers, messages stored without an answer
//! that said so, messages stored twice (two offsets), and partitions stored out of the
//! order their pushes were answered in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::history::{Answer, Delivery, Domain, Pushed};
use super::nemesis::Fault;

/// Examples kept per kind of finding.
const EXAMPLES: usize = 5;

/// One reader's figures.
#[derive(Default, Debug)]
pub struct DomainFigures {
    /// Deliveries.
    pub deliveries: usize,
    /// Distinct messages delivered.
    pub distinct: usize,
    /// Answered as stored, never delivered (for autoAck: beyond what its lost pops explain).
    pub lost: usize,
    /// Answered as stored, never delivered, explained by autoAck pops with no answer.
    pub lost_to_auto_ack: usize,
    /// Messages delivered more than once after an ack that failed or was not answered.
    pub duplicates_failed_ack: usize,
    /// Messages delivered more than once after an ack (or a pop answer) that came later
    /// than the lease.
    pub duplicates_lease_expiry: usize,
    /// Messages delivered more than once without either.
    pub duplicates_unexplained: usize,
    /// Messages first delivered after a later message of their partition was.
    pub order_violations: usize,
}

/// Everything the checker found.
#[derive(Default, Debug)]
pub struct Verdict {
    /// Per reader.
    pub domains: BTreeMap<Domain, DomainFigures>,
    /// Messages answered as stored (queued, duplicate, buffered; bundles answered success).
    pub answered_stored: usize,
    /// Of those, answered `buffered`.
    pub answered_buffered: usize,
    /// Messages whose push or bundle was refused or never answered.
    pub not_answered: usize,
    /// Delivered messages whose push was never answered as stored.
    pub stored_unanswered: usize,
    /// Messages seen at two different offsets.
    pub stored_twice: usize,
    /// Messages stored before one whose push was answered before theirs was sent.
    pub stored_out_of_order: usize,
    /// Findings by kind and by the fault that was under way (or last healed) when the
    /// message at fault was sent.
    pub by_fault: BTreeMap<(String, &'static str), usize>,
    /// A few examples per finding, to reproduce it.
    pub examples: Vec<String>,
}

impl Verdict {
    /// Lost messages over every reader (autoAck losses its failed pops explain excluded).
    pub fn lost(&self) -> usize {
        self.domains.values().map(|d| d.lost).sum()
    }

    /// Order violations: the stored order and each reader's.
    pub fn order_violations(&self) -> usize {
        self.stored_out_of_order
            + self
                .domains
                .values()
                .map(|d| d.order_violations)
                .sum::<usize>()
    }

    /// Is every reader done: each message answered as stored delivered (autoAck: all but
    /// what its lost pops explain)?
    pub fn drained(&self) -> bool {
        self.lost() == 0
    }

    /// The figures as a table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "{:<14} {:>10} {:>9} {:>6} {:>14} {:>13} {:>13} {:>12} {:>11}\n",
            "reader",
            "deliveries",
            "distinct",
            "lost",
            "lost(autoAck)",
            "dup(failack)",
            "dup(expiry)",
            "dup(unexpl.)",
            "order viol."
        ));
        for (domain, d) in &self.domains {
            out.push_str(&format!(
                "{:<14} {:>10} {:>9} {:>6} {:>14} {:>13} {:>13} {:>12} {:>11}\n",
                domain.name(),
                d.deliveries,
                d.distinct,
                d.lost,
                d.lost_to_auto_ack,
                d.duplicates_failed_ack,
                d.duplicates_lease_expiry,
                d.duplicates_unexplained,
                d.order_violations
            ));
        }
        out.push_str(&format!(
            "answered as stored {} (buffered {}); refused or unanswered {}; stored without \
             an answer saying so {}; stored twice {}; stored out of answer order {}\n",
            self.answered_stored,
            self.answered_buffered,
            self.not_answered,
            self.stored_unanswered,
            self.stored_twice,
            self.stored_out_of_order
        ));
        for ((kind, fault), count) in &self.by_fault {
            out.push_str(&format!("{kind}: {count} while or after {fault}\n"));
        }
        for e in &self.examples {
            out.push_str(&format!("  {e}\n"));
        }
        out
    }
}

/// Checks a history. `auto_ack_pops_lost` autoAck pops of at most `pop_batch` messages
/// each went unanswered.
pub fn check(
    pushed: &[Pushed],
    deliveries: &[Delivery],
    lease: Duration,
    auto_ack_pops_lost: usize,
    pop_batch: usize,
    faults: &[(Fault, Instant, Instant)],
    start: Instant,
) -> Verdict {
    let ms = |t: Instant| t.saturating_duration_since(start).as_millis();
    let mut v = Verdict::default();
    let mut blame = |kind: &str, at: Instant| {
        *v.by_fault
            .entry((kind.to_owned(), fault_at(faults, at)))
            .or_default() += 1;
    };
    let by_id: HashMap<&str, &Pushed> = pushed.iter().map(|p| (p.id.as_str(), p)).collect();
    let stored: BTreeSet<&str> = pushed
        .iter()
        .filter(|p| matches!(p.answer, Answer::Stored(..)))
        .map(|p| p.id.as_str())
        .collect();
    v.answered_stored = stored.len();
    v.answered_buffered = pushed
        .iter()
        .filter(|p| matches!(&p.answer, Answer::Stored(_, s) if s == "buffered"))
        .count();
    v.not_answered = pushed.len() - stored.len();

    // Where each message is stored: its offsets (more than one: stored twice).
    let mut offsets: BTreeMap<&str, BTreeSet<(&str, i64)>> = BTreeMap::new();
    for d in deliveries {
        offsets
            .entry(d.id.as_str())
            .or_default()
            .insert((d.partition.as_str(), d.offset));
    }
    for (id, places) in &offsets {
        let sent = by_id.get(id).map_or(start, |p| p.first_sent);
        if places.len() > 1 {
            blame("stored twice", sent);
            v.stored_twice += 1;
            example(&mut v.examples, format!("stored twice: {id} at {places:?}"));
        }
        if !stored.contains(id) {
            blame("stored without an answer", sent);
            v.stored_unanswered += 1;
            let answer = by_id.get(id).map(|p| format!("{:?}", p.answer));
            example(
                &mut v.examples,
                format!("stored without an answer: {id} ({answer:?})"),
            );
        }
    }
    let mut late = Vec::new();
    v.stored_out_of_order = stored_order(&mut v.examples, &mut late, &offsets, &by_id, &ms);
    for (kind, at) in late {
        blame(&kind, at);
    }

    for domain in Domain::ALL {
        let mine: Vec<&Delivery> = deliveries.iter().filter(|d| d.domain == domain).collect();
        let mut figures = DomainFigures {
            deliveries: mine.len(),
            ..Default::default()
        };
        let mut per_id: BTreeMap<&str, Vec<&Delivery>> = BTreeMap::new();
        for d in &mine {
            per_id.entry(d.id.as_str()).or_default().push(d);
        }
        figures.distinct = per_id.len();
        let missing: Vec<&&str> = stored
            .iter()
            .filter(|id| !per_id.contains_key(**id))
            .collect();
        let explainable = match domain {
            Domain::AutoAck => auto_ack_pops_lost * pop_batch,
            _ => 0,
        };
        if missing.len() <= explainable {
            figures.lost_to_auto_ack = missing.len();
        } else {
            figures.lost = missing.len();
            for id in &missing {
                blame(
                    &format!("lost to {}", domain.name()),
                    by_id[**id].first_sent,
                );
            }
            for id in missing.iter().take(EXAMPLES) {
                let p = by_id[**id];
                let answered = match &p.answer {
                    Answer::Stored(at, status) => format!("{status} at {} ms", ms(*at)),
                    other => format!("{other:?}"),
                };
                example(
                    &mut v.examples,
                    format!(
                        "lost to {}: {id} in {} via node {} ({}), sent at {} ms, answered {}",
                        domain.name(),
                        p.partition,
                        p.node,
                        p.via,
                        ms(p.first_sent),
                        answered
                    ),
                );
            }
        }
        // In the order the pops were sent: a message comes again only after an earlier
        // holder's ack failed or its lease ran out.
        for list in per_id.values_mut() {
            list.sort_by_key(|d| d.pop_sent);
        }
        for (id, list) in &per_id {
            if list.len() < 2 {
                continue;
            }
            let earlier = &list[..list.len() - 1];
            let leased = domain != Domain::AutoAck && offsets[id].len() == 1;
            if leased && earlier.iter().any(|d| d.acked.is_none()) {
                figures.duplicates_failed_ack += 1;
            } else if leased && earlier.iter().any(|d| outlived_its_lease(d, lease)) {
                figures.duplicates_lease_expiry += 1;
            } else {
                blame(
                    &format!("unexplained duplicate in {}", domain.name()),
                    list[0].received,
                );
                figures.duplicates_unexplained += 1;
                let seen: Vec<String> = list
                    .iter()
                    .map(|d| {
                        format!(
                            "node {} popped {}-{} ms offset {} acked {:?}",
                            d.node,
                            ms(d.pop_sent),
                            ms(d.received),
                            d.offset,
                            d.acked.map(ms)
                        )
                    })
                    .collect();
                example(
                    &mut v.examples,
                    format!("unexplained duplicate in {}: {id}: {seen:?}", domain.name()),
                );
            }
        }
        let mut late = Vec::new();
        figures.order_violations = delivery_order(&mut v.examples, &mut late, domain, &per_id, &ms);
        for at in late {
            blame(&format!("order in {}", domain.name()), at);
        }
        v.domains.insert(domain, figures);
    }
    v
}

/// A delivery whose ack was answered (or whose pop arrived) after its lease could have run
/// out: the message may come again.
fn outlived_its_lease(d: &Delivery, lease: Duration) -> bool {
    let answered = d.acked.unwrap_or(d.received);
    answered.saturating_duration_since(d.pop_sent) >= lease
}

/// How long after a fault was healed a finding is still put down to it (a spool drains,
/// leases run out).
const AFTERMATH: Duration = Duration::from_secs(10);

/// The fault under way at `at`, or the last one healed less than [`AFTERMATH`] before.
fn fault_at(faults: &[(Fault, Instant, Instant)], at: Instant) -> &'static str {
    faults
        .iter()
        .rev()
        .find(|(_, began, _)| *began <= at)
        .filter(|(_, _, healed)| at <= *healed + AFTERMATH)
        .map_or("no fault", |(fault, ..)| fault.name())
}

/// Per reader and partition: a message first delivered by a pop sent after the pop that
/// first delivered a later offset of its partition was answered.
fn delivery_order(
    examples: &mut Vec<String>,
    late: &mut Vec<Instant>,
    domain: Domain,
    per_id: &BTreeMap<&str, Vec<&Delivery>>,
    ms: &dyn Fn(Instant) -> u128,
) -> usize {
    let mut partitions: BTreeMap<&str, Vec<&Delivery>> = BTreeMap::new();
    for list in per_id.values() {
        let first = list.iter().min_by_key(|d| d.received).expect("a delivery");
        partitions
            .entry(first.partition.as_str())
            .or_default()
            .push(first);
    }
    let mut violations = 0;
    for (partition, mut firsts) in partitions {
        firsts.sort_by_key(|d| std::cmp::Reverse(d.offset));
        let mut earliest_later: Option<&Delivery> = None;
        for d in firsts {
            if let Some(later) = earliest_later {
                if d.pop_sent > later.received && d.offset < later.offset {
                    violations += 1;
                    late.push(d.pop_sent);
                    example(
                        examples,
                        format!(
                            "order in {} partition {partition}: {} (offset {}) first popped at \
                             {} ms, after {} (offset {}) was received at {} ms",
                            domain.name(),
                            d.id,
                            d.offset,
                            ms(d.pop_sent),
                            later.id,
                            later.offset,
                            ms(later.received)
                        ),
                    );
                }
            }
            if earliest_later.map_or(true, |e| d.received < e.received) {
                earliest_later = Some(d);
            }
        }
    }
    violations
}

/// Per partition: a message stored at a higher offset than one whose push was sent after
/// its own was answered as stored, where the README promises the order: both went through
/// the same node, or the earlier was answered `queued` (already in PostgreSQL).
fn stored_order(
    examples: &mut Vec<String>,
    late: &mut Vec<(String, Instant)>,
    offsets: &BTreeMap<&str, BTreeSet<(&str, i64)>>,
    by_id: &HashMap<&str, &Pushed>,
    ms: &dyn Fn(Instant) -> u128,
) -> usize {
    let mut partitions: BTreeMap<&str, Vec<(i64, &Pushed)>> = BTreeMap::new();
    for (id, places) in offsets {
        let (Some(&(partition, offset)), Some(p)) = (places.iter().next(), by_id.get(id)) else {
            continue;
        };
        partitions.entry(partition).or_default().push((offset, p));
    }
    let mut violations = 0;
    for (partition, mut list) in partitions {
        list.sort_by_key(|(offset, _)| std::cmp::Reverse(*offset));
        // Over the higher offsets seen so far: the earliest answer per node, and the
        // earliest `queued` answer.
        let mut per_node: BTreeMap<usize, (Instant, &Pushed, i64)> = BTreeMap::new();
        let mut queued: Option<(Instant, &Pushed, i64)> = None;
        for (offset, p) in list {
            let earlier = [per_node.get(&p.node).copied(), queued]
                .into_iter()
                .flatten()
                .filter(|(at, ..)| *at < p.first_sent)
                .min_by_key(|(at, ..)| *at);
            if let Some((at, a, a_offset)) = earlier {
                violations += 1;
                let status = match &a.answer {
                    Answer::Stored(_, status) => status.as_str(),
                    _ => "?",
                };
                late.push((
                    format!(
                        "stored order: a {} before an earlier {} answered {status}",
                        p.via, a.via
                    ),
                    p.first_sent,
                ));
                example(
                    examples,
                    format!(
                        "stored order in {partition}: {} ({}, node {}, sent {} ms) at offset \
                         {offset}, before {} ({}, node {}, answered {status} at {} ms) at \
                         offset {a_offset}",
                        p.id,
                        p.via,
                        p.node,
                        ms(p.first_sent),
                        a.id,
                        a.via,
                        a.node,
                        ms(at)
                    ),
                );
            }
            if let Answer::Stored(at, status) = &p.answer {
                let entry = per_node.entry(p.node).or_insert((*at, p, offset));
                if *at < entry.0 {
                    *entry = (*at, p, offset);
                }
                if status == "queued" && queued.map_or(true, |(e, ..)| *at < e) {
                    queued = Some((*at, p, offset));
                }
            }
        }
    }
    violations
}

fn example(examples: &mut Vec<String>, line: String) {
    let kind = line.split(':').next().unwrap_or_default().to_owned();
    if examples.iter().filter(|e| e.starts_with(&kind)).count() < EXAMPLES {
        examples.push(line);
    }
}

//! BENCHMARKS.md from a folder of result files: the method, PostgreSQL's settings, the
//! targets and whether this run met them, the throughput and cost tables, the plot, the
//! command of every row, and the hand-written analysis of what bounds each figure.
//!
//! Rows come in file-name order (the bench script numbers its files); scenarios whose name
//! starts with `partitions-` make the plot.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::style::RGBColor;
use queen::app::EMBEDDED_SERVER_SETTINGS;

use crate::args::{size_label, ReportArgs};
use crate::plot::{self, Series};
use crate::result::{ratio, RunResult, SystemResult};

/// Writes the report and the plot.
pub fn write(args: &ReportArgs) -> anyhow::Result<()> {
    let results = load(&args.results)?;
    anyhow::ensure!(
        !results.is_empty(),
        "no result files (*.json) in {}",
        args.results.display()
    );
    plot::partitions_png(
        &args.plot,
        "Queen vs row-per-message SKIP LOCKED queue: msg/s against partitions",
        &partition_series(&results),
    )?;
    let analysis = match &args.analysis {
        Some(p) => {
            Some(std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?)
        }
        None => None,
    };
    let text = markdown(
        &results,
        &plot_link(&args.out, &args.plot),
        analysis.as_deref(),
    );
    std::fs::write(&args.out, text).with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!(
        "wrote {} and {} from {} results",
        args.out.display(),
        args.plot.display(),
        results.len()
    );
    Ok(())
}

fn load(dir: &Path) -> anyhow::Result<Vec<RunResult>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p)?;
            serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", p.display()))
        })
        .collect()
}

/// The plot's path as seen from the report's folder.
fn plot_link(out: &Path, plot: &Path) -> String {
    let base = out.parent().unwrap_or(Path::new(""));
    plot.strip_prefix(base)
        .unwrap_or(plot)
        .display()
        .to_string()
}

fn partition_series(results: &[RunResult]) -> Vec<Series> {
    let mut rows: Vec<&RunResult> = results
        .iter()
        .filter(|r| r.name.starts_with("partitions-"))
        .collect();
    rows.sort_by_key(|r| r.scenario.partitions);
    let line =
        |name: &str, colour: RGBColor, thin: bool, f: &dyn Fn(&RunResult) -> Option<f64>| Series {
            name: name.to_owned(),
            points: rows
                .iter()
                .filter_map(|r| Some((f64::from(r.scenario.partitions), f(r)?)))
                .collect(),
            colour,
            thin,
        };
    vec![
        line("broker push", RGBColor(200, 30, 30), false, &|r| {
            Some(r.broker.push.rate)
        }),
        line("broker pop+ack", RGBColor(30, 60, 200), false, &|r| {
            Some(r.broker.drain.rate)
        }),
        line("baseline enqueue", RGBColor(230, 140, 140), true, &|r| {
            Some(r.baseline.as_ref()?.push.rate)
        }),
        line(
            "baseline dequeue+delete",
            RGBColor(140, 160, 230),
            true,
            &|r| Some(r.baseline.as_ref()?.drain.rate),
        ),
        line(
            "raw ceiling (segments + dedup)",
            RGBColor(90, 90, 90),
            true,
            &|r| Some(r.ceiling.as_ref()?.segments_dedup.rate),
        ),
    ]
}

fn markdown(results: &[RunResult], plot: &str, analysis: Option<&str>) -> String {
    let first = &results[0];
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "# Benchmarks\n");
    let _ = writeln!(
        w,
        "Written by `bench/run.sh` (`queen-bench report`) from {} scenario results, the first \
         started {}. Every figure in a row was measured in the same run on the same PostgreSQL.\n",
        results.len(),
        first.started_at
    );
    let _ = writeln!(
        w,
        "**Machine: {} cores, shared.** PostgreSQL, the broker and the load tool all run on \
         these {} cores at once, on a machine other work also uses: absolute figures move \
         from run to run, so read the ratios, which compare systems measured minutes apart in \
         the same run.\n",
        first.cores, first.cores
    );
    method(w);
    targets(w, results);
    throughput_table(w, results);
    let _ = writeln!(w, "![msg/s against partitions]({plot})\n");
    cost_table(w, results);
    settings(w, first);
    commands(w, results);
    if let Some(text) = analysis {
        let _ = writeln!(w, "{}", text.trim_end());
    }
    out
}

fn method(w: &mut String) {
    let _ = writeln!(
        w,
        "## Method\n\n\
         Each scenario is one `queen-bench run`. It starts `target/release/queen` on a fresh \
         embedded PostgreSQL (defaults: HTTP workers = cores, `DB_POOL_SIZE` 20, zstd level \
         1) and runs, in order, each phase after a `CHECKPOINT`, always with 4 producers and 4 \
         consumers (each one keep-alive HTTP connection, or one PostgreSQL connection for the \
         baseline and the ceiling) and a pop batch equal to the push batch:\n\n\
         1. **broker push**: the producers push JSON batches (one partition per request, \
         partitions round robin, a transaction id per message) until the message count;\n\
         2. **broker pop+ack**: the consumers pop leased batches (`wait=true`) and ack each \
         with one `ack/batch`, until every group has every message; then one more pop per group \
         must find nothing;\n\
         3. **baseline enqueue / dequeue+delete**: the same messages, connections and batch \
         sizes against the classic queue on the same PostgreSQL (below);\n\
         4. **raw ceiling**: the tool frames and zstd-compresses each batch with the broker's \
         own segment code and INSERTs the row straight into a copy of `queen.log_segments` \
         (then again with a per-message `dedup` row, as brokers before transaction-id hashes wrote);\n\
         5. **latency**: producers paced at the same offered load for both systems (a fraction \
         of the slower one's capacity with push and pop+ack sharing the cores, i.e. \
         1 / (1/push rate + groups/pop+ack rate)) while consumers run; latency is push request \
         sent → message delivered to the consumer.\n\n\
         **The baseline** is the queue people write themselves (the shape of pgmq): one row per \
         message (`msg_id` identity primary key, `read_ct`, `enqueued_at`, `vt`, `message \
         jsonb`, index on `vt`); enqueue = one multi-row `INSERT … SELECT unnest($1::text[])` \
         per batch; dequeue = `UPDATE … FROM (SELECT msg_id … WHERE vt <= clock_timestamp() \
         ORDER BY msg_id LIMIT n FOR UPDATE SKIP LOCKED)` pushing `vt` 60 s ahead; ack = \
         `DELETE … WHERE msg_id = ANY($1)`; an empty claim sleeps 100 ms. Consumer groups are \
         one table per group, and an enqueue writes the message into each in one transaction. \
         It ignores partitions (and gives no per-partition order), and it has no transaction-id \
         dedup, which the broker pays for.\n\n\
         **Exactly once**: every payload carries the producer's sequence number; each group \
         must receive each number once, nothing else may arrive.\n\n\
         **Payloads** are JSON documents of exactly the stated size whose padding is \
         pseudo-random letters and digits (about 6 bits of entropy per byte), so compression \
         gets no easy wins.\n\n\
         **CPU** is read from /proc: the broker process, and the PostgreSQL postmaster with all \
         its children; per million messages, push and pop+ack phases together. **WAL** is \
         `pg_current_wal_lsn()` before and after.\n"
    );
}

/// A scenario by its name, if the set ran it.
fn named<'a>(results: &'a [RunResult], name: &str) -> Option<&'a RunResult> {
    results.iter().find(|r| r.name == name)
}

fn targets(w: &mut String, results: &[RunResult]) {
    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(
        w,
        "The last column bounds the throughput targets: the ratio the same run allows a broker \
         that cost no CPU at all, every core busy with only the PostgreSQL and load-tool CPU \
         each message cost (measured in the broker's phase; the tool is the client, and it \
         shares the cores). A target above it cannot be met on this machine by the broker \
         alone, only by PostgreSQL or the client costing less per message. The column before it \
         turns the same measure around: the broker CPU a message the target leaves once \
         PostgreSQL's and the tool's are paid on every core (\"none\" when they alone fill the \
         cores at the target's rate), beside what the broker spent.\n"
    );
    let _ = writeln!(
        w,
        "| target | measured (same run) | verdict | broker CPU a message: spent / the target \
         leaves | bound with a broker costing no CPU |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- |");
    let verdict = |x: Option<f64>, goal: f64| match x {
        Some(x) if x >= goal => "met",
        Some(_) => "**missed**",
        None => "not run",
    };
    let fmt = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.2}×"));
    let budget = |b: Option<(f64, f64)>| match b {
        Some((left, spent)) if left > 0.0 => format!("{spent:.1} µs / {left:.1} µs"),
        Some((_, spent)) => format!("{spent:.1} µs / none"),
        None => "-".to_owned(),
    };
    let at_most = |x: Option<f64>, goal: f64| match x {
        Some(x) if x <= goal => "met",
        Some(_) => "**missed**",
        None => "not run",
    };
    for (scenario, batch, push_goal, pop_goal) in
        [("batch-100", 100, 2.0, 4.0), ("batch-10", 10, 1.0, 2.0)]
    {
        let r = named(results, scenario);
        let push = r.and_then(RunResult::push_ratio);
        let _ = writeln!(
            w,
            "| push at batch {batch} ≥ {push_goal}× baseline enqueue | {} (`{scenario}`) | {} | {} | {} |",
            fmt(push),
            verdict(push, push_goal),
            budget(r.and_then(|r| r.push_broker_budget(push_goal))),
            fmt(r.and_then(RunResult::push_ratio_without_broker)),
        );
        let pop = r.and_then(RunResult::pop_ratio);
        let _ = writeln!(
            w,
            "| pop+ack at batch {batch} ≥ {pop_goal}× baseline dequeue+delete | {} (`{scenario}`) | {} | {} | {} |",
            fmt(pop),
            verdict(pop, pop_goal),
            budget(r.and_then(|r| r.pop_broker_budget(pop_goal))),
            fmt(r.and_then(RunResult::pop_ratio_without_broker)),
        );
    }
    let one = named(results, "producers8-partitions-1")
        .zip(named(results, "producers8-partitions-100"))
        .and_then(|(one, many)| ratio(one.broker.push.rate, many.broker.push.rate));
    let _ = writeln!(
        w,
        "| push to 1 partition ≥ 0.6× push to 100 partitions, 8 producers | {} \
         (`producers8-partitions-1` / `producers8-partitions-100`) | {} | - | - |",
        fmt(one),
        verdict(one, 0.6)
    );
    let b100 = named(results, "batch-100");
    let cpu = b100.and_then(RunResult::pg_cpu_ratio);
    let _ = writeln!(
        w,
        "| PostgreSQL CPU per message, broker ≤ 0.33× baseline | {} (`batch-100`) | {} | - | - |",
        fmt(cpu),
        at_most(cpu, 0.33)
    );
    let wal = b100.and_then(RunResult::wal_per_stored_byte);
    let _ = writeln!(
        w,
        "| broker WAL bytes per message ≤ 1.3× its stored (compressed) bytes per message | {} \
         (`batch-100`) | {} | - | - |",
        fmt(wal),
        at_most(wal, 1.3)
    );
    let (p100, p10k) = (
        named(results, "partitions-100"),
        named(results, "partitions-10000"),
    );
    for (what, f) in [
        (
            "push",
            (|s: &SystemResult| s.push.rate) as fn(&SystemResult) -> f64,
        ),
        ("pop+ack", |s: &SystemResult| s.drain.rate),
    ] {
        let r = p100
            .zip(p10k)
            .and_then(|(a, b)| ratio(f(&b.broker), f(&a.broker)));
        let _ = writeln!(
            w,
            "| broker {what} at 10,000 partitions ≥ ½ of 100 partitions | {} \
             (`partitions-10000` / `partitions-100`) | {} | - | - |",
            fmt(r),
            verdict(r, 0.5)
        );
    }
    let ceiling = b100.and_then(RunResult::ceiling_fractions);
    let _ = writeln!(
        w,
        "| broker push as a fraction of the raw PostgreSQL ceiling (no target; printed) | {} \
         of segment rows, {} of segment + dedup rows (`batch-100`) | - | - | - |\n",
        ceiling.map_or("-".to_owned(), |c| format!("{:.0}%", c.0 * 100.0)),
        ceiling.map_or("-".to_owned(), |c| format!("{:.0}%", c.1 * 100.0)),
    );
}

fn mode(r: &RunResult) -> String {
    if r.scenario.groups == 0 {
        "queue".to_owned()
    } else {
        r.scenario.groups.to_string()
    }
}

fn throughput_table(w: &mut String, results: &[RunResult]) {
    let _ = writeln!(w, "## Throughput (msg/s)\n");
    let _ = writeln!(
        w,
        "Groups: `queue` = queue mode; N = N consumer groups, each receiving every message \
         (pop+ack counts every delivery). The ceiling is the tool inserting segment rows \
         directly (then segment + dedup rows).\n"
    );
    let _ = writeln!(
        w,
        "| scenario | partitions | push batch | groups | payload | messages | broker push | \
         baseline enqueue | ratio | broker pop+ack | baseline dequeue+delete | ratio | \
         raw ceiling (+dedup) | broker push / ceiling (+dedup) |"
    );
    let _ = writeln!(w, "|{}", " --- |".repeat(14));
    for r in results {
        let s = &r.scenario;
        let base = r.baseline.as_ref();
        let rate = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.0}"));
        let times = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.2}×"));
        let (ceil, frac) = match (&r.ceiling, r.ceiling_fractions()) {
            (Some(c), Some((a, b))) => (
                format!("{:.0} ({:.0})", c.segments.rate, c.segments_dedup.rate),
                format!("{:.0}% ({:.0}%)", a * 100.0, b * 100.0),
            ),
            _ => ("-".to_owned(), "-".to_owned()),
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {ceil} | {frac} |",
            r.name,
            s.partitions,
            s.batch,
            mode(r),
            size_label(s.payload),
            r.broker.push.messages,
            rate(Some(r.broker.push.rate)),
            rate(base.map(|b| b.push.rate)),
            times(r.push_ratio()),
            rate(Some(r.broker.drain.rate)),
            rate(base.map(|b| b.drain.rate)),
            times(r.pop_ratio()),
        );
    }
    let _ = writeln!(w);
}

fn cost_table(w: &mut String, results: &[RunResult]) {
    let _ = writeln!(w, "## Latency and cost\n");
    let _ = writeln!(
        w,
        "Latency: push → delivery in ms (p50 / p95 / p99) at the offered load shown, the same \
         for both systems. CPU: seconds per million messages over the push and pop+ack phases; \
         PG = the PostgreSQL server. WAL: bytes per message over the same phases.\n"
    );
    let _ = writeln!(
        w,
        "| scenario | offered msg/s | broker latency | baseline latency | broker CPU s/M | \
         PG CPU s/M under broker | PG CPU s/M under baseline | broker WAL B/msg | baseline WAL \
         B/msg | exactly once |"
    );
    let _ = writeln!(w, "|{}", " --- |".repeat(10));
    for r in results {
        let base = r.baseline.as_ref();
        let lat = |s: Option<&SystemResult>| {
            s.and_then(|s| s.live.as_ref()?.latency.as_ref())
                .map_or("-".to_owned(), |l| {
                    format!("{:.0} / {:.0} / {:.0}", l.p50_ms, l.p95_ms, l.p99_ms)
                })
        };
        let num = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.1}"));
        let whole = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.0}"));
        let once = if r.broker.exactly_once() && base.map_or(true, SystemResult::exactly_once) {
            "yes"
        } else {
            "**NO**"
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {once} |",
            r.name,
            whole(r.broker.live.as_ref().map(|l| l.offered_rate)),
            lat(Some(&r.broker)),
            lat(base),
            num(r.broker.broker_cpu_per_m()),
            num(r.broker.pg_cpu_per_m()),
            num(base.and_then(SystemResult::pg_cpu_per_m)),
            whole(r.broker.wal_per_msg()),
            whole(base.and_then(SystemResult::wal_per_msg)),
        );
    }
    let _ = writeln!(w);
}

fn settings(w: &mut String, first: &RunResult) {
    let names: Vec<String> = EMBEDDED_SERVER_SETTINGS
        .iter()
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    let set = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    };
    let _ = writeln!(
        w,
        "## PostgreSQL settings\n\nThe broker's embedded PostgreSQL as every scenario ran it \
         (server defaults except {set}, which the broker sets):\n"
    );
    let _ = writeln!(w, "| setting | value |\n| --- | --- |");
    for (k, v) in &first.postgres {
        let _ = writeln!(w, "| `{k}` | `{v}` |");
    }
    let _ = writeln!(w);
}

fn commands(w: &mut String, results: &[RunResult]) {
    let _ = writeln!(
        w,
        "## Commands\n\nEach row, as run (from the repository root, after `cargo build \
         --release`):\n"
    );
    let _ = writeln!(w, "| scenario | command |\n| --- | --- |");
    for r in results {
        let _ = writeln!(w, "| {} | `{}` |", r.name, r.command);
    }
    let _ = writeln!(w);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{load, targets};

    /// The targets table from two scenarios of a full run (`bench/fixtures/results`): every
    /// row has the header's cells, and each throughput target says what the broker spent
    /// and what the target leaves it (or that it leaves nothing).
    #[test]
    fn each_throughput_target_shows_the_broker_cpu_it_leaves() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/fixtures/results");
        let results = load(&fixtures).expect("the fixture results");
        let mut w = String::new();

        targets(&mut w, &results);

        let rows: Vec<&str> = w.lines().filter(|l| l.starts_with('|')).collect();
        let cells = |row: &str| row.matches('|').count();
        let header = cells(rows[0]);
        assert!(rows.iter().all(|row| cells(row) == header), "{w}");
        let throughput: Vec<&str> = rows
            .iter()
            .copied()
            .filter(|row| row.starts_with("| push at batch") || row.starts_with("| pop+ack at"))
            .collect();
        assert_eq!(throughput.len(), 4, "{w}");
        for row in throughput {
            let budget = row.split('|').nth(4).expect("the budget cell").trim();
            let (spent, left) = budget.split_once(" / ").expect("spent / left");
            assert!(spent.ends_with(" µs"), "{row}");
            assert!(left.ends_with(" µs") || left == "none", "{row}");
        }
    }
}

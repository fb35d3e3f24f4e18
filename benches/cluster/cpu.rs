//! CPU time of the brokers and of PostgreSQL, read from `/proc/<pid>/stat`.

use std::path::Path;

use anyhow::Context;
/// CPU time in ms: the brokers, and PostgreSQL (postmaster, its live children, and the
/// children it has reaped).
#[derive(Clone, Copy)]
pub(crate) struct Cpu {
    pub(crate) brokers_ms: f64,
    pub(crate) postgres_ms: f64,
}

impl Cpu {
    pub(crate) fn sample(brokers: &[u32], postmaster: u32) -> anyhow::Result<Self> {
        let mut broker_ticks = 0;
        for &pid in brokers {
            broker_ticks += stat(pid)?.own;
        }
        let main = stat(postmaster)?;
        let mut pg_ticks = main.own + main.reaped;
        for entry in std::fs::read_dir("/proc")? {
            let pid = entry?.file_name().to_str().and_then(|n| n.parse().ok());
            // Processes come and go while /proc is read; one that vanished counts nothing.
            if let Some(Ok(s)) = pid.map(stat) {
                if s.parent == postmaster {
                    pg_ticks += s.own;
                }
            }
        }
        // SAFETY: sysconf reads a constant of the system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Ok(Cpu {
            brokers_ms: broker_ticks as f64 * 1000.0 / hz,
            postgres_ms: pg_ticks as f64 * 1000.0 / hz,
        })
    }

    pub(crate) fn since(&self, before: &Cpu) -> Cpu {
        Cpu {
            brokers_ms: self.brokers_ms - before.brokers_ms,
            postgres_ms: self.postgres_ms - before.postgres_ms,
        }
    }
}

struct Stat {
    parent: u32,
    /// utime + stime, in clock ticks.
    own: u64,
    /// cutime + cstime: children already waited for.
    reaped: u64,
}

fn stat(pid: u32) -> anyhow::Result<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')').context("malformed /proc stat")? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field =
        |i: usize| -> anyhow::Result<u64> { Ok(f.get(i).context("short /proc stat")?.parse()?) };
    // After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    Ok(Stat {
        parent: field(1)? as u32,
        own: field(11)? + field(12)?,
        reaped: field(13)? + field(14)?,
    })
}

pub(crate) fn postmaster_pid(pgdata: &Path) -> anyhow::Result<u32> {
    let text = std::fs::read_to_string(pgdata.join("postmaster.pid"))?;
    Ok(text
        .lines()
        .next()
        .context("empty postmaster.pid")?
        .trim()
        .parse()?)
}

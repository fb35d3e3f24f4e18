//! CPU seconds of the processes in a run, read from /proc: the broker (one process), the
//! PostgreSQL server (the postmaster and every child, live or already reaped), and this tool.

use std::fs;

/// Clock ticks per second of /proc's time fields.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The fields of /proc/<pid>/stat this module needs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    ppid: i32,
    /// utime + stime of the process itself, ticks.
    own: u64,
    /// cutime + cstime: reaped children, ticks.
    children: u64,
}

fn parse_stat(text: &str) -> Option<Stat> {
    // The command name is in parentheses and may contain spaces: fields start after ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok());
    Some(Stat {
        ppid: n(1)? as i32,
        own: (n(11)? + n(12)?) as u64,
        children: (n(13)? + n(14)?).max(0) as u64,
    })
}

fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The parent pid of `pid`.
pub fn parent_of(pid: i32) -> Option<i32> {
    stat(pid).map(|s| s.ppid)
}

/// CPU seconds of one process (its own, not its children's).
pub fn process_seconds(pid: i32) -> Option<f64> {
    stat(pid).map(|s| s.own as f64 / ticks_per_second())
}

/// CPU seconds of a server tree: the root, its reaped children, and its live children (and
/// theirs). A backend that exits between two readings moves from "live" to "reaped" without
/// being lost.
pub fn tree_seconds(root: i32) -> Option<f64> {
    let top = stat(root)?;
    let mut ticks = top.own + top.children;
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some(s) = stat(pid).filter(|s| s.ppid == root) {
                ticks += s.own + s.children;
            }
        }
    }
    Some(ticks as f64 / ticks_per_second())
}

/// This process's CPU seconds.
pub fn self_seconds() -> f64 {
    process_seconds(std::process::id() as i32).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_spaces_in_the_name() {
        let line = "4242 (postgres: queen queen [local] idle) S 100 4242 4242 0 -1 4194560 \
                    500 0 0 0 731 269 12 8 20 0 1 0 123456 1000000 200 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.ppid, 100);
        assert_eq!(s.own, 731 + 269);
        assert_eq!(s.children, 12 + 8);
    }

    #[test]
    fn this_process_has_a_parent_and_some_cpu() {
        assert!(parent_of(std::process::id() as i32).is_some());
        assert!(self_seconds() >= 0.0);
    }
}

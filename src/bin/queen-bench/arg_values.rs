//! Value parsers for the command lines of every subcommand: a leaf, so a subcommand's own
//! arguments can use them without importing the top-level argument types that name it.

use std::time::Duration;

/// Parses `10s`, `500ms`, `2m`, or a plain number of seconds.
pub fn parse_duration(raw: &str) -> Result<Duration, String> {
    let s = raw.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("{raw:?} is not a duration (try 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" | "min" => n * 60.0,
        other => return Err(format!("unknown duration unit {other:?} in {raw:?}")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{raw:?} is not a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a fraction in (0, 1] (`run --live-load`).
pub fn parse_fraction(raw: &str) -> Result<f64, String> {
    match raw.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!("{raw:?} must be a fraction in (0, 1]")),
    }
}

/// Parses one `--broker-env` `KEY=VALUE` pair (shared by the subcommands that start a broker).
pub fn parse_env_pair(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{raw:?} is not KEY=VALUE")),
    }
}

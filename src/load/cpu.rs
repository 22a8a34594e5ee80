//! The client's own CPU use, for the self-check: the whole process (user + system) and the
//! load runtime's worker threads (`slotest-load`), whose busy fraction says whether the client
//! was saturated. Linux `/proc` only; elsewhere the self-check relies on send lag alone.

use std::time::{Duration, Instant};

/// Name prefix of the load runtime's worker threads.
pub const LOAD_THREAD: &str = "slotest-load";

/// CPU counters at one instant.
#[derive(Debug, Clone, Copy)]
pub struct CpuMark {
    at: Instant,
    process: Duration,
    load_threads: Duration,
    threads: usize,
}

/// CPU used between two marks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuUse {
    /// Wall time between the marks.
    pub wall: Duration,
    /// Process CPU, user + system (10 ms resolution).
    pub process: Duration,
    /// CPU of the load runtime's worker threads.
    pub load_threads: Duration,
    /// How many worker threads there are.
    pub threads: usize,
}

impl CpuUse {
    /// Fraction of the worker threads' capacity that was used (1.0 = every worker always busy).
    pub fn busy(&self) -> f64 {
        let cap = self.wall.as_secs_f64() * self.threads.max(1) as f64;
        if cap > 0.0 { self.load_threads.as_secs_f64() / cap } else { 0.0 }
    }
}

impl CpuMark {
    /// Reads the counters now; `None` where `/proc` is not there.
    pub fn now() -> Option<CpuMark> {
        let at = Instant::now();
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        let process = Duration::from_millis(ticks * 10); // USER_HZ is 100 on Linux
        let (mut load_threads, mut threads) = (Duration::ZERO, 0);
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let path = task.path();
            let is_load =
                std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.starts_with(LOAD_THREAD));
            if !is_load {
                continue;
            }
            let ns = std::fs::read_to_string(path.join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()));
            if let Some(ns) = ns {
                load_threads += Duration::from_nanos(ns);
                threads += 1;
            }
        }
        Some(CpuMark { at, process, load_threads, threads })
    }

    /// CPU used since `self`.
    pub fn since(&self, later: &CpuMark) -> CpuUse {
        CpuUse {
            wall: later.at.saturating_duration_since(self.at),
            process: later.process.saturating_sub(self.process),
            load_threads: later.load_threads.saturating_sub(self.load_threads),
            threads: later.threads.max(self.threads),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_the_used_share_of_the_workers() {
        let u = CpuUse {
            wall: Duration::from_secs(2),
            process: Duration::from_secs(3),
            load_threads: Duration::from_secs(3),
            threads: 2,
        };
        assert!((u.busy() - 0.75).abs() < 1e-9);
        if cfg!(target_os = "linux") {
            assert!(CpuMark::now().is_some(), "/proc/self/stat readable");
        }
    }
}

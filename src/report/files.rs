//! The report files of a run, each rendered from the one results document: results.json is the
//! document written out; summary.md, junit.xml and report.html render it as read back (the
//! numbers exactly as the file holds them), so `slotest report --format md|junit|html` renders
//! each again from a results.json, byte for byte what the run wrote.

use super::json::{ResultsDoc, results_doc};
use super::{CaseResult, Event, EventKind, Reporter, RunInfo, WriteError, Written};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Renders one report format from a results document.
pub type Render = fn(&ResultsDoc, &mut dyn Write) -> std::io::Result<()>;

/// A report format: its name on the command line (`slotest report --format`), its file, and how
/// it is rendered.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// `md`, `junit`, `html`.
    pub name: &'static str,
    /// `summary.md`, `junit.xml`, `report.html`.
    pub file: &'static str,
    /// Renders it.
    pub render: Render,
}

/// Every format rendered from the document, besides results.json itself.
pub const FORMATS: &[Format] = &[
    Format {
        name: "junit",
        file: "junit.xml",
        render: |doc, w| w.write_all(super::junit_xml(doc).as_bytes()),
    },
    Format {
        name: "md",
        file: "summary.md",
        render: |doc, w| w.write_all(super::summary_md(doc).as_bytes()),
    },
    Format {
        name: "html",
        file: "report.html",
        render: |doc, w| w.write_all(super::html::report_html(doc, std::slice::from_ref(doc)).as_bytes()),
    },
];

/// The file of results.json.
pub const RESULTS: &str = "results.json";

/// The report files of a run, rewritten atomically as cases finish and at the end of the run.
///
/// Each rewrite renders every case so far, so rewriting after every case costs the square of
/// the cases. A finished case is written out when no rewrite is due to take more than a
/// twentieth of the run's time since the last one (on a real engine, whose cases take
/// seconds, that is after every case) and whenever the count of cases doubles; an interrupted
/// run's last case and the run's end are always written. A run's writing then grows with its
/// length, and a file on disk is never more than a twentieth of the time since its last write
/// behind, nor older than half the cases. At the end of a complete run, summary.md's text is
/// also appended to `$GITHUB_STEP_SUMMARY` when that is set (not for a step of a larger run).
pub struct Files {
    dir: PathBuf,
    /// The document written as results.json (`false`: only the formats, as the tests ask).
    json: bool,
    formats: Vec<Format>,
    step_summary: bool,
    /// When the last write ended, and how long it took.
    last: Option<(std::time::Instant, std::time::Duration)>,
}

/// A rewrite may take this share of the time since the last one.
const WRITE_SHARE: u32 = 20;

impl Files {
    /// results.json and every format of [`FORMATS`] into `dir`.
    pub fn new(dir: &Path, step_summary: bool) -> Self {
        Self { dir: dir.to_path_buf(), json: true, formats: FORMATS.to_vec(), step_summary, last: None }
    }

    /// Only `formats`, into `dir` (no results.json, no step summary).
    #[cfg(test)]
    pub fn only(dir: &Path, formats: Vec<Format>) -> Self {
        Self { dir: dir.to_path_buf(), json: false, formats, step_summary: false, last: None }
    }

    /// Whether the case that brought the count to `done` is written out at `now`.
    fn due(&self, done: usize, now: std::time::Instant) -> bool {
        match self.last {
            None => true,
            Some((at, took)) => done.is_power_of_two() || now.duration_since(at) >= took * WRITE_SHARE,
        }
    }

    /// Writes every file for `results`; every one is tried, the first error returned.
    fn write(
        &self,
        run: &RunInfo,
        results: &[CaseResult],
        end: bool,
        written: &mut Written,
    ) -> Result<(), WriteError> {
        let doc = results_doc(run, results);
        let mut first_error = None;
        let mut done = |path: PathBuf, result: Result<(), WriteError>| match result {
            Ok(()) => written.paths.push(path),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        };
        if self.json {
            let path = self.dir.join(RESULTS);
            // Straight from the typed document into the file: a `Value` tree of a
            // 30,000-request case's samples took 24 MB at the end of the run, and the file's
            // bytes in memory 8 MB, more than the records (#40 item 5).
            let result = super::write_atomic_with(&path, |w| {
                serde_json::to_writer_pretty(w, &doc).map_err(std::io::Error::from)
            });
            done(path, result);
        }
        let doc = super::read_back(&doc).unwrap_or(doc);
        for format in &self.formats {
            let path = self.dir.join(format.file);
            let result = super::write_atomic_with(&path, |w| (format.render)(&doc, w));
            done(path, result);
        }
        if let (true, true, Some(step)) = (end, self.step_summary, std::env::var_os("GITHUB_STEP_SUMMARY")) {
            let result = super::markdown::append(Path::new(&step), super::summary_md(&doc).as_bytes());
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Reporter for Files {
    fn report(&mut self, event: &Event<'_>, written: &mut Written) -> Result<(), WriteError> {
        let (run, results, end) = match event.kind {
            // The last case: the run's end rewrites every file straight after (rendering a
            // 30,000-request case's files twice took a tenth of a second).
            EventKind::CaseFinished { run, more: false, .. } if !run.interrupted => return Ok(()),
            EventKind::CaseFinished { run, so_far, .. }
                if run.interrupted || self.due(so_far.len(), std::time::Instant::now()) =>
            {
                (run, so_far, false)
            }
            EventKind::RunFinished { run, results } => (run, results, true),
            _ => return Ok(()),
        };
        let started = std::time::Instant::now();
        let result = self.write(run, results, end, written);
        self.last = Some((std::time::Instant::now(), started.elapsed()));
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// `kind` as the reporters get it.
    fn stamped(kind: EventKind<'_>) -> Event<'_> {
        Event { at: std::time::SystemTime::now(), elapsed: Duration::ZERO, kind }
    }

    /// A file reporter that writes how many cases it was given into `name` in a fresh
    /// directory (removed by the caller).
    fn counting(name: &str) -> (Files, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("slotest-reporter-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("out.txt");
        let count =
            Format { name: "count", file: "out.txt", render: |doc, w| write!(w, "{}", doc.cases.len()) };
        (Files::only(&dir, vec![count]), dir, path)
    }

    /// A rewrite that took 10 ms waits 200 ms for the next, except when the cases double.
    #[test]
    fn a_rewrite_waits_twenty_times_its_cost_or_a_doubling() {
        let mut r = Files::only(Path::new("unused"), Vec::new());
        let t0 = Instant::now();
        assert!(r.due(1, t0), "the first case is always written");
        r.last = Some((t0, Duration::from_millis(10)));
        assert!(!r.due(3, t0 + Duration::from_millis(199)));
        assert!(r.due(3, t0 + Duration::from_millis(200)));
        assert!(r.due(4, t0 + Duration::from_millis(1)), "4 cases: twice the 2 last written");
        assert!(!r.due(300, t0 + Duration::from_millis(1)));
        assert!(r.due(256, t0 + Duration::from_millis(1)));
    }

    /// The last case of a run leaves the files to the run's end, which follows at once; an
    /// interrupted run's last case is written.
    #[test]
    fn the_last_case_leaves_the_files_to_the_runs_end() {
        let (mut r, dir, path) = counting("last");
        let mut run = super::super::tests::run_info();
        let results = super::super::tests::results();
        let last = results.last().expect("a case");
        let mut written = Written::default();
        let finished =
            |run, more| stamped(EventKind::CaseFinished { run, result: last, so_far: &results[..2], more });
        r.report(&finished(&run, false), &mut written).expect("ok");
        assert!(written.paths.is_empty() && !path.exists(), "the run's end writes it");
        r.report(&finished(&run, true), &mut written).expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "2", "a first case with more to come");
        run.interrupted = true;
        r.last = Some((Instant::now(), Duration::from_secs(3600)));
        r.report(
            &stamped(EventKind::CaseFinished { run: &run, result: last, so_far: &results[..3], more: false }),
            &mut written,
        )
        .expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "3", "interrupted: written now");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An interrupted run's last case and the run's end are written whatever the schedule.
    #[test]
    fn an_interrupted_case_and_the_end_are_always_written() {
        let (mut r, dir, path) = counting("interrupted");
        r.last = Some((Instant::now(), Duration::from_secs(3600)));
        let mut run = super::super::tests::run_info();
        let results = super::super::tests::results();
        let last = results.last().expect("a case");
        let mut written = Written::default();
        r.report(
            &stamped(EventKind::CaseFinished { run: &run, result: last, so_far: &results[..3], more: true }),
            &mut written,
        )
        .expect("ok");
        assert!(written.paths.is_empty() && !path.exists(), "3 cases, a rewrite not due: skipped");
        run.interrupted = true;
        r.report(
            &stamped(EventKind::CaseFinished { run: &run, result: last, so_far: &results[..3], more: true }),
            &mut written,
        )
        .expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "3");
        run.interrupted = false;
        r.last = Some((Instant::now(), Duration::from_secs(3600)));
        r.report(&stamped(EventKind::RunFinished { run: &run, results: &results[..1] }), &mut written)
            .expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

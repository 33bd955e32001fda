//! A minimal stderr logger for the `log` crate: `warning: ...` lines.
//!
//! Scans under `logsql.on_error = 'warn'` report damage through `log::warn!`.
//! The level is `warn` unless `-v` raises it or `LOGSQL_LOG` (or `RUST_LOG`)
//! names another (`error`, `info`, `debug`, `trace`, `off`). While a progress bar is shown,
//! lines are printed above it rather than through it.

use std::sync::Mutex;

use indicatif::ProgressBar;
use log::{Level, LevelFilter, Log, Metadata, Record};

/// The progress bar currently drawn on stderr, if any.
static PROGRESS: Mutex<Option<ProgressBar>> = Mutex::new(None);

struct StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let label = match record.level() {
            Level::Error => "error",
            Level::Warn => "warning",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        };
        let line = if record.level() <= Level::Warn {
            format!("{label}: {}", record.args())
        } else {
            format!("{label} [{}]: {}", record.target(), record.args())
        };
        let line = super::terminal::for_stderr(&line);
        let bar = PROGRESS.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn flush(&self) {}
}

/// Installs the logger (once; later calls do nothing). `verbose` is the
/// count of `-v` flags: 1 `info`, 2 `debug`, 3 or more `trace`; without any
/// the level is what `LOGSQL_LOG` (or `RUST_LOG`) names, else `warn`.
pub fn init(verbose: u8) {
    let named = || {
        std::env::var("LOGSQL_LOG")
            .or_else(|_| std::env::var("RUST_LOG"))
            .ok()
            .and_then(|v| v.trim().parse::<LevelFilter>().ok())
    };
    let level = match verbose {
        0 => named().unwrap_or(LevelFilter::Warn),
        1 => LevelFilter::Info,
        2 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    };
    if log::set_logger(&StderrLogger).is_ok() {
        log::set_max_level(level);
    }
}

/// Routes log lines around `bar` while it is drawn (`None` when it is gone).
pub fn set_progress(bar: Option<ProgressBar>) {
    *PROGRESS.lock().unwrap_or_else(|e| e.into_inner()) = bar;
}

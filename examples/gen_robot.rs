//! Generates a deterministic robot recording (joint states, commands, camera
//! frames) for the LeRobot dataset tests and benchmark.
//!
//! ```text
//! cargo run --example gen_robot -- OUT.mcap [--seconds S] [--width W] [--height H]
//!     [--joint-hz HZ] [--wrist] [--noise] [--seed N] [--start NANOS] [--gap FROM:TO]
//!     [--task AT:TEXT ...] [--metadata NAME:KEY=VALUE ...]
//! ```
//!
//! `--gap`: no message between FROM and TO seconds after the start (an
//! episode cut by `split_on_gap`); `--noise`: front frames of sensor noise;
//! `--task`: a `/task` message at AT seconds;
//! `--metadata`: an MCAP metadata record NAME with KEY=VALUE (repeat NAME for
//! several keys). Topics and signals: see `benches/support/robot.rs`.

#[path = "../benches/support/robot.rs"]
mod robot;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: gen_robot OUT.mcap [--seconds S] [--width W] [--height H] [--joint-hz HZ] [--wrist] [--noise] [--seed N] [--start NANOS] [--gap FROM:TO] [--task AT:TEXT ...] [--metadata NAME:KEY=VALUE ...]";

fn parse() -> Result<(PathBuf, robot::RobotOptions), String> {
    let mut o = robot::RobotOptions::default();
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        let bad = |name: &str, v: &str| format!("{name} {v:?} is not a number\n{USAGE}");
        match arg.as_str() {
            "--seconds" => {
                let v = value("--seconds")?;
                o.seconds = v.parse().map_err(|_| bad("--seconds", &v))?;
            }
            "--width" => {
                let v = value("--width")?;
                o.width = v.parse().map_err(|_| bad("--width", &v))?;
            }
            "--height" => {
                let v = value("--height")?;
                o.height = v.parse().map_err(|_| bad("--height", &v))?;
            }
            "--joint-hz" => {
                let v = value("--joint-hz")?;
                o.joint_hz = v.parse().map_err(|_| bad("--joint-hz", &v))?;
            }
            "--seed" => {
                let v = value("--seed")?;
                o.seed = v.parse().map_err(|_| bad("--seed", &v))?;
            }
            "--start" => {
                let v = value("--start")?;
                o.start_ns = v.parse().map_err(|_| bad("--start", &v))?;
            }
            "--gap" => {
                let v = value("--gap")?;
                let malformed = || format!("--gap {v:?} is not FROM:TO (seconds)\n{USAGE}");
                let (from, to) = v.split_once(':').ok_or_else(malformed)?;
                let from = from.parse().map_err(|_| malformed())?;
                let to = to.parse().map_err(|_| malformed())?;
                o.gap = Some((from, to));
            }
            "--task" => {
                let v = value("--task")?;
                let malformed = || format!("--task {v:?} is not AT:TEXT (seconds)\n{USAGE}");
                let (at, text) = v.split_once(':').ok_or_else(malformed)?;
                let at = at.parse().map_err(|_| malformed())?;
                o.tasks.push((at, text.to_string()));
            }
            "--metadata" => {
                let v = value("--metadata")?;
                let malformed = || format!("--metadata {v:?} is not NAME:KEY=VALUE\n{USAGE}");
                let (name, pair) = v.split_once(':').ok_or_else(malformed)?;
                let (key, val) = pair.split_once('=').ok_or_else(malformed)?;
                let pair = (key.to_string(), val.to_string());
                match o.metadata.iter_mut().find(|(n, _)| n == name) {
                    Some((_, pairs)) => pairs.push(pair),
                    None => o.metadata.push((name.to_string(), vec![pair])),
                }
            }
            "--wrist" => o.wrist = true,
            "--noise" => o.noise = true,
            _ if out.is_none() && !arg.starts_with('-') => out = Some(PathBuf::from(arg)),
            _ => return Err(USAGE.to_string()),
        }
    }
    Ok((out.ok_or(USAGE)?, o))
}

fn main() -> ExitCode {
    let (path, options) = match parse() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match robot::write_robot(&path, &options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_robot: {e}");
            ExitCode::FAILURE
        }
    }
}

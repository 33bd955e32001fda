//! `logsql events add | list | export | import`: the events table
//! ([`logsql::events`]) from the command line, in `--events DIR` or the
//! `--catalog`'s `events/` directory. Appends go through the same plan as
//! `INSERT INTO events`; exports stream the table as JSON lines.

use std::io::{BufReader, BufWriter, Write};

use futures::StreamExt;
use logsql::LogsqlOptions;
use logsql::events::json::{self, Shape};
use logsql::events::{Event, append, location_of};

use super::App;
use super::args::{EventAddArgs, EventsCommand};
use super::error::{CliError, CliResult};

/// Runs one `logsql events` action.
pub fn run(app: &mut App, command: &EventsCommand, out: &mut dyn Write) -> CliResult {
    let location = location(app)?;
    match command {
        EventsCommand::Add(add) => {
            let event = event_of(add)?;
            let n = app.rt.block_on(append(&app.ctx, &location, &[event]))?;
            eprintln!("appended {n} event to {location}");
            Ok(())
        }
        EventsCommand::List => app
            .run_statement(
                "SELECT * FROM events ORDER BY start_time, end_time, id",
                out,
            )
            .map(|_| ()),
        EventsCommand::Export { output, foxglove } => {
            let shape = if *foxglove {
                Shape::Foxglove
            } else {
                Shape::Full
            };
            match output {
                None => export(app, shape, out).map(|_| ()),
                Some(path) => {
                    let name = path.display().to_string();
                    let mut file =
                        logsql::AtomicFile::create(path).map_err(|e| CliError::io(&name, e))?;
                    let handle = file
                        .file()
                        .try_clone()
                        .map_err(|e| CliError::io(&name, e))?;
                    let mut writer = BufWriter::new(handle);
                    let n = export(app, shape, &mut writer)?;
                    writer.flush().map_err(|e| CliError::io(&name, e))?;
                    drop(writer);
                    file.commit().map_err(|e| CliError::io(&name, e))?;
                    eprintln!("wrote {n} events to {name}");
                    Ok(())
                }
            }
        }
        EventsCommand::Import { files } => {
            for path in files {
                let name = path.display().to_string();
                let events = if name == "-" {
                    json::read(std::io::stdin().lock(), "stdin")
                } else {
                    let file = std::fs::File::open(path).map_err(|e| CliError::io(&name, e))?;
                    json::read(BufReader::new(file), &name)
                }
                .map_err(CliError::msg)?;
                let n = app.rt.block_on(append(&app.ctx, &location, &events))?;
                eprintln!("imported {n} events from {name} into {location}");
            }
            Ok(())
        }
    }
}

/// Where the session keeps its events.
fn location(app: &App) -> CliResult<String> {
    location_of(&LogsqlOptions::from_config(
        app.ctx.state().config_options(),
    ))
    .ok_or_else(|| {
        CliError::msg(
            "logsql events needs a place for them: --events DIR (any directory or \
             object-store prefix) or --catalog CAT (its events/ directory)",
        )
    })
}

/// The event `logsql events add` describes.
fn event_of(add: &EventAddArgs) -> CliResult<Event> {
    let time = |flag: &str, s: &str| {
        logsql::units::parse_time(s).map_err(|e| CliError::msg(format!("--{flag}: {e}")))
    };
    let start = time("start", &add.start)?;
    let end = add.end.as_deref().map(|s| time("end", s)).transpose()?;
    if let Some(end) = end
        && end < start
    {
        return Err(CliError::msg(format!(
            "--end {} is before --start {}",
            add.end.as_deref().unwrap_or_default(),
            add.start
        )));
    }
    Ok(Event {
        id: add.id.clone(),
        device: add.device.clone(),
        recording: add.recording.clone(),
        start,
        end,
        kind: add.kind.clone(),
        properties: add.properties.iter().cloned().collect(),
        created_at: None,
    })
}

/// Streams the events, oldest first, as JSON lines to `out`; returns how
/// many.
fn export(app: &App, shape: Shape, out: &mut dyn Write) -> CliResult<u64> {
    let mut n = 0;
    app.rt.block_on(async {
        let frame = app
            .ctx
            .sql("SELECT * FROM events ORDER BY start_time, end_time, id")
            .await?;
        let mut stream = frame.execute_stream().await?;
        while let Some(batch) = stream.next().await {
            for event in logsql::events::schema::events_of(&batch?)? {
                writeln!(out, "{}", json::to_line(&event, shape))
                    .map_err(|e| CliError::io("writing the events", e))?;
                n += 1;
            }
        }
        Ok::<_, CliError>(())
    })?;
    Ok(n)
}

//! `logsql recover --to bag|db3`: which writer a recover runs. The
//! recovered messages are written by the same writers and the same sink
//! factory as `COPY (...) TO 'x.bag'` and `COPY (...) TO 'dir/' STORED AS
//! DB3` ([`logsql::write::sink::LogWrite`]):
//!
//! - `--to bag` (also chosen by an OUTPUT named `.bag`): a ROS1 bag 2.0,
//!   indexed, with one connection per (topic, type) of the input carrying
//!   its connection header (the `logsql-writers` crate's `bag`);
//! - `--to db3`: a ROS 2 bag directory, one `.db3` and its `metadata.yaml`,
//!   one topic per (topic, type) of the input with its QoS profiles and
//!   definition (its `ros2`).
//!
//! Every channel of the input's summaries is declared before any row (so a
//! connection whose messages were all lost is kept), a channel the format
//! cannot carry (not `ros1` for a bag, not `cdr` for a ROS 2 bag) refuses
//! the input before anything is written, and the messages of a channel
//! without a type (a bag connection whose record was lost) are left out and
//! counted.

use std::path::Path;

use logsql::write::sink::LogWrite;
use logsql_readers::model::Summary;

use super::args::RecoverTo;
use super::error::{CliError, CliResult};

/// The name of `to` as `--to` spells it.
fn spelled(to: RecoverTo) -> &'static str {
    match to {
        RecoverTo::Mcap => "mcap",
        RecoverTo::Bag => "bag",
        RecoverTo::Db3 => "db3",
    }
}

/// The writer of a recover `to` the format, declaring the channels of
/// `summaries`, or why the input cannot be written so.
pub fn writer(to: RecoverTo, input: &str, summaries: &[Summary]) -> CliResult<LogWrite> {
    let channels: Vec<_> = summaries
        .iter()
        .flat_map(|s| s.channels.values().cloned())
        .collect();
    let write = match to {
        RecoverTo::Mcap => LogWrite::default(),
        RecoverTo::Bag => LogWrite::bag(),
        RecoverTo::Db3 => LogWrite::db3(),
    };
    let checked = write.declaring(channels);
    checked.map_err(|why| {
        CliError::msg(format!(
            "{input}: cannot recover --to {}: {why}",
            spelled(to)
        ))
    })
}

/// What `--to` means when not given: a bag for an OUTPUT named `.bag`, MCAP
/// otherwise.
pub fn infer(to: Option<RecoverTo>, output: &Path) -> RecoverTo {
    to.unwrap_or_else(|| {
        if output
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("bag"))
        {
            RecoverTo::Bag
        } else {
            RecoverTo::Mcap
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bag_name_means_a_bag_unless_told_otherwise() {
        assert_eq!(infer(None, Path::new("out.bag")), RecoverTo::Bag);
        assert_eq!(infer(None, Path::new("dir/OUT.BAG")), RecoverTo::Bag);
        assert_eq!(infer(None, Path::new("out.mcap")), RecoverTo::Mcap);
        assert_eq!(infer(None, Path::new("bagdir")), RecoverTo::Mcap);
        assert_eq!(
            infer(Some(RecoverTo::Db3), Path::new("x.bag")),
            RecoverTo::Db3
        );
        assert_eq!(
            infer(Some(RecoverTo::Mcap), Path::new("x.bag")),
            RecoverTo::Mcap
        );
    }
}

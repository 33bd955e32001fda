//! A camera topic at a glance, as `logsql frames` and the MCP server's
//! `sample_frames` show it: the topic's time span from `topics()` (the
//! summary), times spread evenly over it, and the query of the first image
//! at or after each time as a PNG thumbnail (the time pushed down and `LIMIT
//! 1`, so a long recording reads a few chunks, not the file).

use super::sql_literal;
use super::units::rfc3339;

/// The query of `topic`'s first and last log time in `input`, in
/// nanoseconds (one row; NULLs when the topic has no messages).
pub fn span_sql(input: &str, topic: &str) -> String {
    format!(
        "SELECT CAST(min(start_time) AS BIGINT), CAST(max(end_time) AS BIGINT) \
         FROM topics({}) WHERE topic = {}",
        sql_literal(input),
        sql_literal(topic)
    )
}

/// `n` times from `first` to `last`, both included, evenly spaced (`first`
/// alone when `n` is 1).
pub fn spread(first: i64, last: i64, n: u32) -> Vec<i64> {
    let n = i128::from(n);
    (0..n)
        .map(|k| match n {
            1 => first,
            _ => first + ((i128::from(last) - i128::from(first)) * k / (n - 1)) as i64,
        })
        .collect()
}

/// The query of the first image of `topic` at or after `at`: its log time
/// (`t`, nanoseconds) and a PNG at most `size` pixels on its longer side
/// (`png`).
pub fn thumbnail_sql(input: &str, topic: &str, size: u32, at: i64) -> String {
    format!(
        "SELECT CAST(log_time AS BIGINT) AS t, image_thumbnail(image, {size}) AS png \
         FROM read_images({}, {}) WHERE log_time >= {} ORDER BY log_time LIMIT 1",
        sql_literal(input),
        sql_literal(topic),
        sql_literal(&rfc3339(at))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_spread_over_the_span_with_both_ends() {
        assert_eq!(spread(10, 40, 4), [10, 20, 30, 40]);
        assert_eq!(spread(10, 40, 1), [10]);
        assert_eq!(spread(5, 5, 3), [5, 5, 5]);
    }
}

//! CARLA files through the scan engine: content detection of `.log` files,
//! `STORED AS CARLA`, the `frame`/`elapsed` extra columns, typed table
//! functions and time pruning (counts from the python header walk).
//! The reader itself is tested on the same files in the readers crate
//! (`crates/readers/tests/readers/carla_reader.rs`).

use crate::sql::{ints, pairs, query};

fn path(name: &str) -> Option<String> {
    crate::fixtures::file("carla", &format!("{name}.log")).map(|p| p.display().to_string())
}

#[tokio::test]
async fn sql_over_a_recording() {
    let Some(f) = path("synth_0916_basic") else {
        return;
    };
    let ctx = logsql::session_context();
    let got = pairs(
        &ctx,
        &format!("SELECT topic, count(*) FROM '{f}' GROUP BY topic ORDER BY topic"),
    )
    .await;
    let want: Vec<(String, i64)> = crate::carla_facts::FIXTURES
        .iter()
        .find(|x| x.name == "synth_0916_basic")
        .unwrap()
        .packets
        .iter()
        .map(|(t, n)| (t.to_string(), *n as i64))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    assert_eq!(got, want);
    query(
        &ctx,
        &format!("CREATE EXTERNAL TABLE rec STORED AS CARLA LOCATION '{f}'"),
    )
    .await;
    // Frame 5: 15 packets; frames 21..=40 by elapsed.
    assert_eq!(
        ints(&ctx, "SELECT count(*) FROM rec WHERE frame = 5").await,
        vec![15]
    );
    assert_eq!(
        ints(
            &ctx,
            "SELECT count(*) FROM rec WHERE topic = 'frame_start' AND elapsed >= 1.0 AND elapsed < 1.96"
        )
        .await,
        vec![20]
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM positions('{f}')")).await,
        vec![4812]
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM actors('{f}')")).await,
        vec![38]
    );
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM wheels('{f}')")).await,
        vec![7228]
    );
    assert_eq!(
        ints(
            &ctx,
            &format!(
                "SELECT count(*) FROM frames('{f}') WHERE log_time >= to_timestamp(1700000001) \
                 AND log_time < to_timestamp(1700000002)"
            )
        )
        .await,
        vec![20]
    );
}

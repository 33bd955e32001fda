//! BDDF files through the scan engine: every series of every fixture against
//! the official reader's view (`expected.json`), the `series` and `pod` table
//! functions, per-block time pruning (by the scan metrics), the whole-file
//! SHA1 check and user-supplied descriptor sets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;
use serde_json::Value;

use crate::fixtures;
use crate::sql::{analyze, error, ints, metric, query};

fn dir() -> Option<PathBuf> {
    fixtures::dir("bddf")
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn expected(dir: &Path) -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// Per series index: (blocks, payload bytes, first ns, last ns), from SQL.
async fn series_facts(ctx: &SessionContext, f: &str) -> BTreeMap<u64, (i64, i64, i64, i64)> {
    let sql = format!(
        "SELECT s.series_index, count(m.topic), coalesce(sum(length(m.data)), 0), \
         coalesce(min(CAST(m.log_time AS BIGINT)), 0), coalesce(max(CAST(m.log_time AS BIGINT)), 0) \
         FROM series('{f}') s LEFT JOIN '{f}' m ON m.topic = s.topic \
         GROUP BY s.series_index ORDER BY s.series_index"
    );
    let mut out = BTreeMap::new();
    for b in query(ctx, &sql).await {
        for i in 0..b.num_rows() {
            let int = |c: usize| {
                let col = datafusion::arrow::compute::cast(
                    b.column(c),
                    &datafusion::arrow::datatypes::DataType::Int64,
                )
                .unwrap();
                col.as_primitive::<Int64Type>().value(i)
            };
            out.insert(int(0) as u64, (int(1), int(2), int(3), int(4)));
        }
    }
    out
}

#[tokio::test]
async fn every_series_matches_the_official_reader() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let mut checked = 0;
    for (name, e) in expected(&dir) {
        if name == "truncated.bddf" || name == "no_series.bddf" {
            continue;
        }
        let f = path(&dir, &name);
        let got = series_facts(&ctx, &f).await;
        let series = e["complete"]["series"].as_array().unwrap();
        assert_eq!(got.len(), series.len(), "{name}");
        for s in series {
            let idx = s["series_index"].as_u64().unwrap();
            let blocks = s["blocks"].as_i64().unwrap();
            let (n, bytes, first, last) = got[&idx];
            assert_eq!(n, blocks, "{name} series {idx}");
            assert_eq!(
                bytes,
                s["total_bytes"].as_i64().unwrap(),
                "{name} series {idx}"
            );
            if blocks > 0 {
                assert_eq!(
                    first,
                    s["first_ns"].as_i64().unwrap(),
                    "{name} series {idx}"
                );
                assert_eq!(last, s["last_ns"].as_i64().unwrap(), "{name} series {idx}");
            }
            checked += 1;
        }
        // The identifier hash recomputed by logsql agrees with the file.
        let bad = ints(
            &ctx,
            &format!("SELECT count(*) FROM series('{f}') WHERE NOT hash_ok"),
        )
        .await;
        assert_eq!(bad, [0], "{name}");
    }
    assert!(checked >= 40, "{checked}");
    // No series at all: an empty table, not a crash (the official readers assert).
    let f = path(&dir, "no_series.bddf");
    assert_eq!(
        ints(&ctx, &format!("SELECT count(*) FROM '{f}'")).await,
        [0]
    );
}

#[tokio::test]
async fn pod_samples_for_every_type() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let e = expected(&dir);
    let f = path(&dir, "pod_types.bddf");
    let mut checked = 0;
    for s in e["pod_types.bddf"]["complete"]["series"]
        .as_array()
        .unwrap()
    {
        let Some(samples) = s["samples"].as_i64() else {
            continue;
        };
        let idx = s["series_index"].as_u64().unwrap();
        let n = ints(&ctx, &format!("SELECT count(*) FROM pod('{f}', '{idx}')")).await;
        assert_eq!(n, [samples], "series {idx}");
        checked += 1;
    }
    assert_eq!(checked, 13);
    // A 4x4 float32 matrix is a fixed-size list of 16; the identity's diagonal is ~1.
    let b = query(
        &ctx,
        &format!("SELECT value FROM pod('{f}', 'body/tform_odom') LIMIT 1"),
    )
    .await;
    let v = b[0].column(0).as_fixed_size_list();
    assert_eq!(v.value_length(), 16);
    // int8 extremes survive as typed values.
    let n = ints(
        &ctx,
        &format!(
            "SELECT CAST(min(value) AS BIGINT) FROM pod('{f}', 'acme:signals:varname=test.int8') \
             UNION ALL SELECT CAST(max(value) AS BIGINT) FROM pod('{f}', 'acme:signals:varname=test.int8')"
        ),
    )
    .await;
    let mut n = n;
    n.sort();
    assert_eq!(n, [-128, 127]);
    let e = error(&ctx, &format!("SELECT * FROM pod('{f}', 'no/such/series')")).await;
    assert!(e.contains("no/such/series"), "{e}");
}

#[tokio::test]
async fn a_time_window_reads_only_blocks_inside_it() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "long_sparse.bddf");
    // 600 s recording; one series in a 60 s window (10%).
    let lo = 1_700_000_300_000_000_000i64;
    let hi = lo + 60_000_000_000;
    let q = format!(
        "SELECT count(*), sum(length(data)) FROM '{f}' WHERE topic = 'imu/accel' AND \
         log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({hi})"
    );
    let n = ints(
        &ctx,
        &format!(
            "SELECT count(*) FROM '{f}' WHERE topic = 'imu/accel' AND \
         log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({hi})"
        ),
    )
    .await[0];
    // 10 Hz in blocks of 5 samples: 2 blocks per second.
    assert!((118..=122).contains(&n), "{n}");
    let plan = analyze(&ctx, &q).await;
    let bytes = metric(&plan, "bytes_read");
    let payload = ints(
        &ctx,
        &format!(
            "SELECT sum(length(data)) FROM '{f}' WHERE topic = 'imu/accel' AND \
         log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({hi})"
        ),
    )
    .await[0] as u64;
    // Only the selected blocks are read (each with its small block header).
    let size = std::fs::metadata(dir.join("long_sparse.bddf"))
        .unwrap()
        .len();
    assert!(
        bytes as f64 >= payload as f64 * 0.99 && bytes < payload * 2 && bytes * 20 < size,
        "read {bytes} for {payload} payload bytes of {size}:\n{plan}"
    );
}

#[tokio::test]
async fn the_sha1_checksum_is_verified_and_can_be_skipped() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "basic.bddf");
    let plan = analyze(
        &ctx,
        &format!("SELECT count(*) FROM '{f}' WHERE length(data) > 0"),
    )
    .await;
    assert!(
        metric(&plan, "bytes_verified") > 0 || plan.contains("bytes_verified=0"),
        "{plan}"
    );
    // A flipped byte inside a payload: every block still reads, then the mismatch is reported.
    let mut bytes = std::fs::read(dir.join("basic.bddf")).unwrap();
    bytes[400_000] ^= 0x55;
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    let bad = tmp.path().join("flipped.bddf");
    std::fs::write(&bad, &bytes).unwrap();
    let bad = bad.display().to_string();
    let e = error(
        &ctx,
        &format!("SELECT count(*) FROM '{bad}' WHERE length(data) >= 0"),
    )
    .await;
    assert!(
        e.contains("flipped.bddf") && e.to_lowercase().contains("sha1"),
        "{e}"
    );
    ctx.sql("SET logsql.verify_checksums = false")
        .await
        .unwrap();
    let n = ints(
        &ctx,
        &format!("SELECT count(*) FROM '{bad}' WHERE length(data) >= 0"),
    )
    .await;
    assert_eq!(n, [621]);
}

#[tokio::test]
async fn truncated_files_return_every_complete_block() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    ctx.sql("SET logsql.on_error = 'warn'").await.unwrap();
    // The default (`auto`) reads unfinished recordings as `warn` does.
    let default = logsql::session_context();
    for (name, n) in [
        ("truncated.before-index.bddf", 189),
        ("truncated.no-trailer.bddf", 189),
        ("truncated.mid-block.bddf", 117 - 1),
    ] {
        let f = path(&dir, name);
        for ctx in [&ctx, &default] {
            assert_eq!(
                ints(ctx, &format!("SELECT count(*) FROM '{f}'")).await,
                [n],
                "{name}"
            );
        }
    }
    let strict = logsql::session_context();
    strict.sql("SET logsql.on_error = 'error'").await.unwrap();
    let f = path(&dir, "truncated.mid-block.bddf");
    let e = error(
        &strict,
        &format!("SELECT count(*) FROM '{f}' WHERE length(data) > 0"),
    )
    .await;
    assert!(
        e.contains("truncated.mid-block.bddf") && e.contains("byte"),
        "{e}"
    );
}

#[tokio::test]
async fn a_descriptor_set_gives_protobuf_series_their_schema() {
    let Some(dir) = dir() else {
        return;
    };
    let ctx = logsql::session_context();
    let f = path(&dir, "basic.bddf");
    let q = format!(
        "SELECT count(*) FROM channels('{f}') WHERE schema_encoding = 'protobuf' AND schema IS NOT NULL"
    );
    assert_eq!(ints(&ctx, &q).await, [0]);
    let set = path(&dir, "bosdyn_api_descriptors.binpb");
    ctx.sql(&format!("SET logsql.descriptor_set = '{set}'"))
        .await
        .unwrap();
    // RobotState, RobotId, Event, OperatorComment.
    assert_eq!(ints(&ctx, &q).await, [4]);
    ctx.sql("SET logsql.descriptor_set = '/no/such/file.binpb'")
        .await
        .unwrap();
    let e = error(&ctx, &q).await;
    assert!(e.contains("/no/such/file.binpb"), "{e}");
}

/// `verify_checksums`: a window query reads its window's bytes only (the
/// whole-file SHA1 is not checked), a full scan checks it in the same pass
/// (reading only the bytes between blocks on top), `always` checks it for any
/// query, `never` for none.
#[tokio::test]
async fn whole_file_checksums_never_make_a_window_read_everything() {
    let Some(dir) = dir() else {
        return;
    };
    let size = std::fs::metadata(dir.join("long_sparse.bddf"))
        .unwrap()
        .len();
    // A flipped byte in the last block's payload: the SHA1 no longer matches,
    // and no block header or index changes.
    let mut bytes = std::fs::read(dir.join("long_sparse.bddf")).unwrap();
    let tmp = tempfile::Builder::new()
        .prefix("logsql-")
        .tempdir()
        .unwrap();
    let good = tmp.path().join("good.bddf");
    std::fs::write(&good, &bytes).unwrap();
    let last_block = bytes.len() - 2_000;
    bytes[last_block] ^= 0x01;
    let bad = tmp.path().join("bad.bddf");
    std::fs::write(&bad, &bytes).unwrap();
    let lo = 1_700_000_300_000_000_000i64;
    let hi = lo + 60_000_000_000;
    let window = |f: &std::path::Path| {
        format!(
            "SELECT count(*), sum(length(data)) FROM '{}' WHERE topic = 'imu/accel' AND \
             log_time >= to_timestamp_nanos({lo}) AND log_time < to_timestamp_nanos({hi})",
            f.display()
        )
    };
    let full =
        |f: &std::path::Path| format!("SELECT count(*), sum(length(data)) FROM '{}'", f.display());

    // The default (`auto`): the window reads ~10% and verifies nothing...
    let ctx = logsql::session_context();
    let plan = analyze(&ctx, &window(&good)).await;
    assert_eq!(metric(&plan, "bytes_verified"), 0, "{plan}");
    assert!(metric(&plan, "bytes_read") * 5 < size, "{plan}");
    // ...so the window of the damaged copy reads fine (its blocks are intact).
    let rows = ints(
        &ctx,
        &window(&bad).replace("count(*), sum(length(data))", "count(*)"),
    )
    .await;
    assert!((118..=122).contains(&rows[0]), "{rows:?}");
    // A full scan checks the SHA1 in its pass: bytes read plus bytes read only
    // for the digest are the file, not twice the file.
    let plan = analyze(&ctx, &full(&good)).await;
    let read = metric(&plan, "bytes_read");
    let verified = metric(&plan, "bytes_verified");
    assert!(verified > 0 && verified * 10 < size, "{plan}");
    assert!(read + verified <= size + size / 20, "{plan}");
    let e = error(&ctx, &full(&bad)).await;
    assert!(e.contains("bad.bddf") && e.contains("sha1"), "{e}");

    // Split into byte ranges (4 partitions): the partition owning the file's
    // start still verifies a full scan, reading the other ranges once more
    // for the digest; a window still verifies nothing.
    let split = logsql::session_context_with_config(
        datafusion::prelude::SessionConfig::new()
            .with_target_partitions(4)
            // Small batches: DataFusion splits no scan it expects to fit one batch.
            .with_batch_size(64)
            .set_usize("datafusion.optimizer.repartition_file_min_size", 0),
    );
    // A file of several chunks (the benchmark generator, 9 MB: at least five
    // chunks of at most 2 MiB).
    let big = tmp.path().join("big.bddf");
    crate::gen_bddf::write(big.to_str().unwrap(), 9_000_000, 1, 60_000).unwrap();
    let mut bytes = std::fs::read(&big).unwrap();
    let big_size = bytes.len() as u64;
    let flip = bytes.len() - 100_000;
    bytes[flip] ^= 0x01;
    let big_bad = tmp.path().join("big_bad.bddf");
    std::fs::write(&big_bad, &bytes).unwrap();
    let plan = analyze(&split, &full(&big)).await;
    assert!(plan.contains("big.bddf:0.."), "not split:\n{plan}");
    assert!(metric(&plan, "chunks_read") >= 4, "{plan}");
    let read = metric(&plan, "bytes_read");
    let verified = metric(&plan, "bytes_verified");
    assert!(
        verified * 2 > big_size && read + verified <= 2 * big_size,
        "{plan}"
    );
    let e = error(&split, &full(&big_bad)).await;
    assert!(e.contains("big_bad.bddf") && e.contains("sha1"), "{e}");
    // Its first minute reads its own chunks and verifies nothing.
    let first = format!(
        "SELECT count(*) FROM '{}' WHERE log_time < to_timestamp_nanos(1700000003000000000)",
        big.display()
    );
    let plan = analyze(&split, &first).await;
    assert_eq!(metric(&plan, "bytes_verified"), 0, "{plan}");
    assert!(metric(&plan, "bytes_read") * 2 < big_size, "{plan}");

    // `always`: the window checks the SHA1 too (reading the whole file once).
    let always = logsql::session_context();
    always
        .sql("SET logsql.verify_checksums = 'always'")
        .await
        .unwrap();
    let e = error(&always, &window(&bad)).await;
    assert!(e.contains("bad.bddf") && e.contains("sha1"), "{e}");

    // `never`: not even a full scan checks it.
    let never = logsql::session_context();
    never
        .sql("SET logsql.verify_checksums = 'never'")
        .await
        .unwrap();
    let n = ints(
        &never,
        &format!(
            "SELECT count(*) FROM '{}' WHERE length(data) >= 0",
            bad.display()
        ),
    )
    .await;
    assert!(n[0] > 0);
    let e = never
        .sql("SET logsql.verify_checksums = 'sometimes'")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("must be 'auto', 'always' or 'never'"), "{e}");
}

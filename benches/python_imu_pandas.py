"""Every /imu message of the ~200 MB benchmark MCAP into a pandas DataFrame:
logsql (read_topic through logsql.sql, Arrow C stream, .to_pandas()) against the
official Python `mcap` reader with `mcap-ros1-support`'s decoder building the
same DataFrame. Checks both frames are equal, then prints the best of RUNS
wall-clock times and the ratio.

    python benches/python_imu_pandas.py target/bench-data/bench.mcap [RUNS]

Needs the logsql package (a release wheel: maturin build --release -m
python/Cargo.toml) and `pip install mcap mcap-ros1-support pandas`. The file is
made by `cargo run --release --example gen_mcap -- target/bench-data/bench.mcap --seconds 376`.
"""

import sys
import time

import pandas as pd

import logsql

FIELDS = [
    ("orientation", "x"), ("orientation", "y"), ("orientation", "z"), ("orientation", "w"),
    ("angular_velocity", "x"), ("angular_velocity", "y"), ("angular_velocity", "z"),
    ("linear_acceleration", "x"), ("linear_acceleration", "y"), ("linear_acceleration", "z"),
]
COLUMNS = ["log_time"] + [f"{a}_{b}" for a, b in FIELDS]


def with_logsql(path: str) -> pd.DataFrame:
    select = ", ".join(f"{a}.{b} AS {a}_{b}" for a, b in FIELDS)
    return logsql.sql(f"SELECT log_time, {select} FROM read_topic('{path}', '/imu')").to_pandas()


def with_mcap(path: str) -> pd.DataFrame:
    from mcap.reader import make_reader
    from mcap_ros1.decoder import DecoderFactory

    rows = []
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _schema, _channel, message, m in reader.iter_decoded_messages(topics=["/imu"]):
            o, w, a = m.orientation, m.angular_velocity, m.linear_acceleration
            rows.append((message.log_time, o.x, o.y, o.z, o.w, w.x, w.y, w.z, a.x, a.y, a.z))
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["log_time"] = pd.to_datetime(df["log_time"], unit="ns", utc=True)
    return df


def best(fn, path, runs):
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn(path)
        times.append(time.perf_counter() - start)
    return min(times), out


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    t_logsql, ours = best(with_logsql, path, runs)
    t_mcap, theirs = best(with_mcap, path, max(1, runs // 3))
    ours = ours.sort_values("log_time", kind="stable").reset_index(drop=True)
    theirs = theirs.sort_values("log_time", kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, theirs, check_exact=True)
    print(f"/imu rows: {len(ours)} x {len(ours.columns)} columns (frames equal)")
    print(f"logsql.sql(read_topic).to_pandas(): {t_logsql * 1000:.0f} ms (best of {runs})")
    print(f"mcap make_reader + mcap_ros1 DecoderFactory -> DataFrame: {t_mcap * 1000:.0f} ms")
    print(f"ratio: {t_mcap / t_logsql:.1f}x")


if __name__ == "__main__":
    main()

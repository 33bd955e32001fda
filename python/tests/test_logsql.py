"""The Python package against real files of every format, through both paths
(datafusion-python with logsql's tables, and logsql.sql), with the counts,
byte sums, first times and payload digests that logsql's Rust engine gives
(which the Rust tests check against the official readers).

Run by .ci/run (``bash python/run_tests.sh``). Fixtures come from
``../shared/fixtures`` (or ``LOGSQL_FIXTURES``); without them the tests that
need them are skipped, unless ``LOGSQL_REQUIRE_FIXTURES=1``.
"""

import hashlib
import os
import pathlib
import shutil

import pyarrow as pa
import pytest

import logsql

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(os.environ.get("LOGSQL_FIXTURES", ROOT.parent / "shared" / "fixtures"))
DEMO = ROOT / "tests" / "data" / "demo.mcap"


def fixture(relative: str) -> str:
    path = FIXTURES / relative
    if not path.is_file():
        if os.environ.get("LOGSQL_REQUIRE_FIXTURES") == "1":
            pytest.fail(f"fixtures required (LOGSQL_REQUIRE_FIXTURES=1) but {path} is missing")
        pytest.skip(f"fixture {path} not found (set LOGSQL_FIXTURES or check out ../shared)")
    return str(path)


# Per topic: messages, payload bytes, first log_time (ns), md5 of the
# comma-joined sha256 of every payload in (log_time, sha256) order.
EXPECTED = {
    "mcap/samples/compressed.mcap": [
        ("/diagnostics", 52, 33872, 1490149580103843113, "34c560a908e7a2c313ced260d8d5c0c5"),
        ("/tf", 774, 72756, 1490149580103843113, "c57cf9bd8f66ea122cef1041e3f0fc70"),
    ],
    "rosbag/robot_localization-test1.bag": [
        ("/fix", 989, 118680, 1432235498039331631, "f2653037373ec7e8c66c3040e84e888f"),
        ("/husky_velocity_controller/odom", 3952, 2817776, 1432235498028275834, "142ef1a5778b9bdb08fdac5a9b300c35"),
        ("/imu/data", 11865, 3796800, 1432235498025043042, "5bc31442c22e0f60a80c3265fefae1b2"),
    ],
    "apollo/generated/small.record": [
        ("/apollo/canbus/chassis", 600, 44273, 1700000000005298236, "45347f634403f94cdb0e9bd2626b02cc"),
        ("/apollo/localization/pose", 600, 139073, 1700000000001736025, "6ccdb875a3258d2b0db0b2b6acb7bd14"),
        ("/apollo/perception/obstacles", 35, 104020, 1700000002531728051, "9bb8e038320ad6a3cf2cb5dada96d3e3"),
    ],
    "bddf/basic.bddf": [
        ("battery/cell_mv", 13, 800, 1700000000002100000, "7f956b02262d03df43e6d702b893f629"),
        ("bosdyn.api.Event", 3, 326, 1700000001666666666, "5a21f08eaafb9943e0b008a8f260a5e6"),
        ("bosdyn.api.OperatorComment", 4, 158, 1700000000700000000, "8053e3d4141eaf7588258080c2edfe53"),
        ("bosdyn.api.RobotId", 1, 68, 1700000000000000000, "5e1e24f22777755e505f7a04daade0fd"),
        ("bosdyn.api.RobotState", 500, 690240, 1700000000000000000, "7174348be181e3c5e28dd9594326c735"),
        ("imu/accel", 100, 24000, 1700000000001300000, "a4374f4ff6031decd0b3f7befaab87c5"),
    ],
    "carla/synth_0916_basic.log": [
        ("biker", 200, 5560, 1700000000000000000, "ea8b77e396bd41829b7383c68de3672c"),
        ("collision", 200, 484, 1700000000000000000, "64c6056193dec5df904c837d7efaa78b"),
        ("door", 200, 436, 1700000000000000000, "9e6e0b61a5db3f7606e5fd102dbe325d"),
        ("event_add", 200, 5019, 1700000000000000000, "329c55a88f1a5943af4fa7e2e3bf5307"),
        ("event_del", 200, 488, 1700000000000000000, "0586719f2759f986c01a4f44eb2785eb"),
        ("event_parent", 200, 400, 1700000000000000000, "94b562ba5d02e2be1584ee227d627cea"),
        ("frame_end", 200, 0, 1700000000000000000, "b0f495d02696a3506b7f1e0d9fba003e"),
        ("frame_start", 200, 4800, 1700000000000000000, "d1f7bf37cf7b8af33dc4864dd9713402"),
        ("position", 200, 135136, 1700000000000000000, "847fcb8453ecf332bdfbf979f57b83f8"),
        ("traffic_light", 200, 16400, 1700000000000000000, "7e242db9e8a651a0659ca7b34d23a771"),
        ("vehicle_animation", 200, 42862, 1700000000000000000, "01b15235562f1584daa8ba4e99c60977"),
        ("vehicle_light", 200, 16576, 1700000000000000000, "914bc8125614c9bd77303fceb463c6b2"),
        ("visual_time", 200, 1600, 1700000000000000000, "5fb0e64f9499c26f975d90d2777f28d6"),
        ("walker_animation", 200, 8360, 1700000000000000000, "e3e16ec7a49e04211ac5cac55685ac19"),
        ("wheels", 200, 81628, 1700000000000000000, "2df37f14333fd2de6e712c42c1c9eb4a"),
    ],
}

# DataFusion built-ins only, so the same text runs in datafusion-python (whose
# length() does not take binary; hex-encoding and halving counts bytes exactly).
PER_TOPIC = (
    "SELECT topic, count(*) AS n, sum(length(encode(data, 'hex')) / 2) AS bytes, "
    "CAST(min(log_time) AS BIGINT) AS first, "
    "md5(string_agg(encode(sha256(data), 'hex'), ',' ORDER BY log_time, encode(sha256(data), 'hex'))) AS digest "
    "FROM {table} GROUP BY topic ORDER BY topic"
)


def rows(t: pa.Table):
    return [tuple(r.values()) for r in t.to_pylist()]


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_sql_reads_every_format(relative):
    path = fixture(relative)
    got = logsql.sql(PER_TOPIC.format(table=f"'{path}'"))
    assert rows(got) == EXPECTED[relative]


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_datafusion_python_reads_every_format(relative):
    datafusion = pytest.importorskip("datafusion")
    path = fixture(relative)
    ctx = datafusion.SessionContext()
    ctx.register_table("log", logsql.table(path))
    got = ctx.sql(PER_TOPIC.format(table="log")).to_arrow_table()
    assert rows(got) == EXPECTED[relative]


def test_directory_of_mixed_formats_and_pushdown(tmp_path):
    datafusion = pytest.importorskip("datafusion")
    for relative in EXPECTED:
        shutil.copy(fixture(relative), tmp_path / pathlib.Path(relative).name)
    (tmp_path / "notes.txt").write_text("not a log\n")
    expected = sorted(row for per_topic in EXPECTED.values() for row in per_topic)
    assert rows(logsql.sql(PER_TOPIC.format(table=f"'{tmp_path}/'"))) == expected
    ctx = datafusion.SessionContext()
    ctx.register_table("fleet", logsql.table(tmp_path))
    assert rows(ctx.sql(PER_TOPIC.format(table="fleet")).to_arrow_table()) == expected
    # A time and topic filter and a LIMIT inside the user's session.
    window = (
        "SELECT count(*) AS n FROM fleet WHERE topic = '/imu/data' "
        "AND log_time >= arrow_cast(1432235500000000000, 'Timestamp(Nanosecond, Some(\"UTC\"))') "
        "AND log_time < arrow_cast(1432235510000000000, 'Timestamp(Nanosecond, Some(\"UTC\"))')"
    )
    n = ctx.sql(window).to_pydict()["n"][0]
    local = logsql.sql(window.replace("fleet", f"'{tmp_path}/'")).to_pydict()["n"][0]
    assert n == local and 0 < n < 11865
    assert ctx.sql("SELECT topic FROM fleet LIMIT 3").count() == 3


def test_decoded_topic_in_both_paths():
    datafusion = pytest.importorskip("datafusion")
    path = fixture("rosbag/robot_localization-test1.bag")
    query = (
        "SELECT count(*) AS n, sum(linear_acceleration.x) AS ax, min(header.seq) AS s0, "
        "max(header.seq) AS s1, CAST(min(log_time) AS BIGINT) AS first FROM {table}"
    )
    expected = {"n": [11865], "ax": [-2553.9438177940838], "s0": [2127], "s1": [13991], "first": [1432235498025043042]}
    got = logsql.sql(query.format(table=f"read_topic('{path}', '/imu/data')")).to_pydict()
    assert got["n"] == expected["n"] and got["s0"] == expected["s0"] and got["s1"] == expected["s1"]
    assert got["ax"][0] == pytest.approx(expected["ax"][0], rel=1e-12)
    ctx = datafusion.SessionContext()
    ctx.register_table("imu", logsql.topic_table(path, "/imu/data"))
    via_df = ctx.sql(query.format(table="imu")).to_pydict()
    assert via_df["n"] == expected["n"] and via_df["first"] == expected["first"]
    assert via_df["ax"][0] == pytest.approx(expected["ax"][0], rel=1e-12)
    # The first message, field by field (the values rosbags reads).
    first = logsql.sql(
        f"SELECT header.seq AS seq, orientation.x AS ox, linear_acceleration.z AS az "
        f"FROM read_topic('{path}', '/imu/data') ORDER BY log_time LIMIT 1"
    ).to_pylist()[0]
    assert first == {"seq": 2127, "ox": 0.4441650138815254, "az": 0.20593104379195717}
    # flatten: dotted column names.
    flat = logsql.topic_table(path, "/imu/data", flatten=True)
    assert ("linear_acceleration.x", "Float64") in flat.columns()


def test_frames_and_checks_from_python():
    bag = ROOT / "tests" / "data" / "demo.bag"
    got = logsql.sql(
        f"SELECT count(*) AS n, count(tf_lookup(file, 'map', 'camera_link', log_time)) AS posed, "
        f"max(quat_to_euler(tf_lookup(file, 'odom', 'base_link', log_time))['yaw']) AS yaw "
        f"FROM read_topic('{bag}', '/imu')"
    ).to_pylist()[0]
    assert got["n"] == 400 and got["posed"] > 390 and got["yaw"] is not None
    links = logsql.sql(
        f"SELECT parent_frame, child_frame, is_static, count(*) AS n FROM transforms('{bag}') "
        "GROUP BY ALL ORDER BY 1, 2"
    ).to_pylist()
    assert [(r["parent_frame"], r["child_frame"], r["is_static"], r["n"]) for r in links] == [
        ("base_link", "camera_link", True, 1),
        ("map", "odom", False, 100),
        ("odom", "base_link", False, 100),
    ]
    checks = logsql.sql(
        f"SELECT check, passed FROM check_recordings('{DEMO}', '[topics.\"/imu\"]\nrate = 200') ORDER BY check"
    ).to_pylist()
    assert {(r["check"], r["passed"]) for r in checks} == {("health", True), ("present", True), ("rate", True)}


def test_pandas_and_polars_frames():
    pytest.importorskip("pandas")
    polars = pytest.importorskip("polars")
    query = f"SELECT log_time, linear_acceleration.x AS ax FROM read_topic('{DEMO}', '/imu') ORDER BY log_time"
    t = logsql.sql(query)
    assert t.num_rows == 2000
    df = t.to_pandas()
    assert list(df.columns) == ["log_time", "ax"]
    assert str(df["log_time"].dtype) == "datetime64[ns, UTC]"
    assert df["ax"].sum() == pytest.approx(86.6943359375)
    pl = polars.from_arrow(t)
    assert pl.height == 2000 and pl["ax"].sum() == pytest.approx(86.6943359375)


def test_payload_bytes_reach_python_as_binary_view():
    # `data` is a BinaryView column that references payloads in their chunks:
    # the bytes Python gets are the payloads, in pyarrow, pandas and polars.
    pytest.importorskip("pandas")
    polars = pytest.importorskip("polars")
    t = logsql.sql(f"SELECT data, encode(sha256(data), 'hex') AS h FROM '{DEMO}' ORDER BY log_time, h")
    assert str(t.schema.field("data").type) == "binary_view"
    rows = t.to_pydict()
    assert len(rows["data"]) == 2610
    assert sum(len(d) for d in rows["data"]) == 804595
    assert all(hashlib.sha256(d).hexdigest() == h for d, h in zip(rows["data"], rows["h"]))
    df = t.to_pandas()
    assert isinstance(df["data"].iloc[0], bytes) and df["data"].iloc[0] == rows["data"][0]
    pl = polars.from_arrow(t)
    assert pl["data"].dtype == polars.Binary and pl["data"][0] == rows["data"][0]


def test_info_is_the_summary():
    path = fixture("mcap/samples/compressed.mcap")
    d = logsql.info(path)
    assert d["format"] == "mcap" and d["indexed"] is True
    assert d["size"] == os.path.getsize(path)
    assert d["message_count"] == 826
    assert d["start_time_ns"] == 1490149580103843113
    assert d["chunks"] > 0 and sum(d["chunk_compression"].values()) == d["chunks"]
    assert [(t["topic"], t["message_count"]) for t in d["topics"]] == [("/diagnostics", 52), ("/tf", 774)]
    assert {c["topic"] for c in d["channels"]} == {"/diagnostics", "/tf"}
    assert d["damage"] is None


def test_info_counts_what_the_file_does_not_state_as_the_cli_does():
    # A summary without a statistics record or message indexes: no message
    # counts stated. The CLI's `logsql info` counts them from message
    # headers; so does info() (the summary alone said None).
    path = fixture("mcap/conformance/TenMessages/TenMessages-ch-chx-pad-rch-rsh-sum.mcap")
    d = logsql.info(path)
    assert d["format"] == "mcap"
    assert d["message_count"] == 10
    assert d["messages_counted_from_headers"] is True
    assert (d["start_time_ns"], d["end_time_ns"]) == (0, 9)
    assert [(t["topic"], t["message_count"]) for t in d["topics"]] == [("example", 10)]
    assert [c["topic"] for c in d["channels"]] == ["example"]
    # A file that states its counts is not counted again.
    assert logsql.info(fixture("mcap/samples/compressed.mcap"))["messages_counted_from_headers"] is False


def test_damage_is_an_error_with_file_and_offset(tmp_path, capfd):
    data = pathlib.Path(fixture("mcap/samples/compressed.mcap")).read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) * 2 // 3])
    query = f"SELECT topic, count(*) AS n FROM '{cut}' GROUP BY topic ORDER BY topic"
    readable = [("/diagnostics", 38), ("/tf", 560)]
    # The default: an unfinished recording gives every complete message (and a warning).
    assert rows(logsql.sql(query)) == readable
    warned = capfd.readouterr().err
    assert "logsql warning: " in warned and "cut.mcap: unfinished mcap file" in warned, warned
    assert rows(logsql.sql(query, options={"on_error": "warn"})) == readable
    # Strict: the error comes after the rows, which travel with it.
    with pytest.raises(logsql.QueryError) as err:
        logsql.sql(query, options={"on_error": "error"})
    assert "cut.mcap: truncated mcap file" in str(err.value)
    assert "at byte 374331" in str(err.value)
    assert rows(err.value.partial) == readable
    # Corruption fails by default, also after every readable row: a flipped
    # byte inside the last chunk's compressed data breaks its CRC or its frame.
    bad = tmp_path / "bad.mcap"
    broken = bytearray(data)
    broken[len(data) * 2 // 3] ^= 0xFF
    bad.write_bytes(bytes(broken))
    with pytest.raises(logsql.QueryError) as err:
        logsql.sql(f"SELECT count(*) AS n, sum(length(data)) AS b FROM '{bad}'")
    assert "bad.mcap: corrupt mcap data at byte 374384" in str(err.value)
    # Every chunk but the broken one (2 messages) is counted.
    assert rows(err.value.partial) == [(824, 106440)]


def test_version_mismatch_fails_clearly(monkeypatch):
    datafusion = pytest.importorskip("datafusion")
    assert logsql.DATAFUSION_MAJOR == 55
    assert datafusion.__version__.split(".")[0] == "55"
    monkeypatch.setattr(datafusion, "__version__", "56.0.0")
    with pytest.raises(ImportError) as err:
        logsql.table(str(DEMO))
    message = str(err.value)
    assert "built on DataFusion 55" in message and "56.0.0" in message
    assert "pip install 'datafusion>=55,<56'" in message
    # logsql.sql needs no datafusion-python.
    assert logsql.sql(f"SELECT count(*) AS n FROM '{DEMO}'").to_pydict() == {"n": [2610]}


def test_bad_options_and_paths():
    with pytest.raises(ValueError, match="on_errorr"):
        logsql.sql("SELECT 1", options={"on_errorr": "warn"})
    with pytest.raises(Exception, match="no_such_dir"):
        logsql.sql("SELECT * FROM '/no_such_dir/run.mcap'")


def metric(plan: str, name: str) -> float:
    """A logsql scan metric from an EXPLAIN ANALYZE plan. DataFusion prints
    large counts with a unit (`1.74 K`): those come back approximately."""
    line = next(l for l in plan.splitlines() if f" {name}=" in l)
    value = line.split(f" {name}=", 1)[1].split(",", 1)[0].rstrip("]").strip()
    number, _, unit = value.partition(" ")
    return float(number) * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9}[unit]


def test_filters_and_projection_reach_the_scan_in_datafusion_python():
    datafusion = pytest.importorskip("datafusion")
    path = fixture("rosbag/robot_localization-test1.bag")
    ctx = datafusion.SessionContext()
    ctx.register_table("log", logsql.table(path))
    query = (
        "SELECT count(*) AS n FROM log WHERE topic = '/imu/data' "
        "AND log_time >= arrow_cast(1432235500000000000, 'Timestamp(Nanosecond, Some(\"UTC\"))') "
        "AND log_time < arrow_cast(1432235505000000000, 'Timestamp(Nanosecond, Some(\"UTC\"))')"
    )
    n = ctx.sql(query).to_pydict()["n"][0]
    assert n == logsql.sql(query.replace("FROM log", f"FROM '{path}'")).to_pydict()["n"][0]
    plan = "\n".join(r["plan"] for r in ctx.sql("EXPLAIN ANALYZE " + query).to_arrow_table().to_pylist())
    # The time window pruned chunks inside logsql's scan, which filtered
    # exactly: the host adds no filter of its own.
    assert metric(plan, "chunks_read") < metric(plan, "chunks_total"), plan
    assert metric(plan, "messages_read") < 11865, plan
    assert "FilterExec" not in plan.split("LogsqlScan", 1)[0], plan
    # LIMIT and projection: a few rows of one column.
    got = ctx.sql("SELECT topic FROM log WHERE topic = '/fix' LIMIT 5").to_pydict()
    assert got == {"topic": ["/fix"] * 5}


def test_sql_asof_join_both_spellings():
    demo = str(DEMO)
    imu = f"(SELECT log_time FROM '{demo}' WHERE topic = '/imu')"
    diag = f"(SELECT log_time FROM '{demo}' WHERE topic = '/diagnostics')"
    counts = "SELECT count(*) AS n, count(d.log_time) AS matched FROM {imu} i {join}"
    for join, want in [
        (f"ASOF JOIN {diag} d MATCH_CONDITION (i.log_time >= d.log_time)", (2000, 1999)),
        (f"ASOF LEFT JOIN {diag} d ON i.log_time >= d.log_time", (2000, 1999)),
        (f"ASOF JOIN {diag} d ON i.log_time >= d.log_time", (1999, 1999)),
    ]:
        got = logsql.sql(counts.format(imu=imu, join=join)).to_pylist()[0]
        assert (got["n"], got["matched"]) == want, join


def official_mcap_messages(path):
    """(topic, log time, sha256) of every message, by the official mcap reader."""
    from mcap.reader import make_reader

    with open(path, "rb") as f:
        return sorted(
            (channel.topic, message.log_time, hashlib.sha256(message.data).hexdigest())
            for _, channel, message in make_reader(f).iter_messages(log_time_order=False)
        )


@pytest.mark.parametrize(
    "relative,kind",
    [("mcap/samples/compressed.mcap", "bag"), ("ros2/mcap/talker/talker.mcap", "db3")],
)
def test_copy_to_bag_and_db3_is_read_back_by_rosbags(tmp_path, relative, kind):
    """`COPY (SELECT * FROM 'x.mcap') TO 'y.bag'` and `TO 'dir/' STORED AS DB3`
    from Python: rosbags' own readers read the official mcap reader's messages."""
    from rosbags.highlevel import AnyReader

    src = fixture(relative)
    if kind == "bag":
        from rosbags.rosbag1 import Reader

        out = tmp_path / "out.bag"
        statement = f"COPY (SELECT * FROM '{src}') TO '{out}'"
    else:
        from rosbags.rosbag2 import Reader

        out = tmp_path / "out"
        statement = f"COPY (SELECT * FROM '{src}') TO '{out}/' STORED AS DB3"
    expected = official_mcap_messages(src)
    assert logsql.sql(statement).to_pydict() == {"count": [len(expected)]}
    with Reader(out) as reader:
        got = sorted((c.topic, t, hashlib.sha256(d).hexdigest()) for c, t, d in reader.messages())
        assert reader.message_count == len(expected)
        connections = list(reader.connections)
    assert got == expected
    if kind == "bag":
        # Connection headers: the types and md5sums of the source's channels.
        assert sorted((c.topic, c.msgtype, c.digest) for c in connections) == [
            ("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", "60810da900de1dd6ddd437c3503511da"),
            ("/tf", "tf2_msgs/msg/TFMessage", "94810edda583a504dfda3829e70d7eec"),
        ]
    with AnyReader([out]) as reader:
        decoded = [reader.deserialize(d, c.msgtype) for c, _, d in reader.messages()]
    assert len(decoded) == len(expected)


def test_index_and_catalog(tmp_path):
    # A fleet of two recordings (hive directories), indexed, then queried
    # through the catalog; a new recording is added by a second run.
    for robot in ["r1", "r2"]:
        d = tmp_path / "fleet" / f"robot={robot}"
        d.mkdir(parents=True)
        shutil.copy(DEMO, d / "run.mcap")
    cat = str(tmp_path / "cat")
    report = logsql.index(str(tmp_path / "fleet"), cat)
    assert len(report["added"]) == 2 and report["recordings"] == 2 and report["generation"] is not None
    fleet = logsql.catalog(cat)
    rec = fleet.recordings().to_pydict()
    assert sorted(rec["device"]) == ["r1", "r2"]
    assert rec["message_count"] == [2610, 2610]
    topics = fleet.topics().to_pydict()
    assert sorted(set(topics["topic"])) == ["/camera/compressed", "/diagnostics", "/imu", "/tf"]
    assert fleet.chunks().num_rows == 30
    n = fleet.sql("SELECT count(*) AS n FROM recordings WHERE device = 'r2'").to_pydict()["n"]
    assert n == [1]
    # A scan of the fleet pruned by the catalog: the same answer as without it.
    q = f"SELECT count(*) AS n FROM '{tmp_path / 'fleet'}/' WHERE topic = '/imu'"
    assert fleet.sql(q).to_pydict()["n"] == logsql.sql(q).to_pydict()["n"] == [4000]
    d = tmp_path / "fleet" / "robot=r3"
    d.mkdir()
    shutil.copy(DEMO, d / "run.mcap")
    again = logsql.index([str(tmp_path / "fleet")], cat, dry_run=True)
    assert len(again["added"]) == 1 and again["generation"] is None
    again = logsql.index([str(tmp_path / "fleet")], cat)
    assert len(again["added"]) == 1 and again["unchanged"] == 2 and again["recordings"] == 3
    assert repr(fleet) == f"logsql.Catalog({cat!r})"
    # Events kept with the catalog: appended from intervals(), joined to recordings.
    assert fleet.events().num_rows == 0
    fleet.sql(
        "INSERT INTO events (recording, start_time, end_time, type) "
        "SELECT file, start_time, end_time, 'high_z' FROM intervals("
        f"'{tmp_path / 'fleet'}/robot=r1/run.mcap', '/imu', 'linear_acceleration.z > 9.83', '20 ms', '5 ms')"
    )
    events = fleet.events().to_pydict()
    assert len(events["id"]) == 14 and set(events["type"]) == {"high_z"}
    joined = fleet.sql(
        "SELECT r.device, count(*) AS n FROM events e JOIN recordings r ON e.recording = r.location GROUP BY 1"
    ).to_pydict()
    assert joined == {"device": ["r1"], "n": [14]}

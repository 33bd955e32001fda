#!/usr/bin/env bash
# benches/formats_compare.sh: the speed and pruning targets of the Apollo, BDDF
# and CARLA readers, measured with the logsql CLI against the Python readers on
# ~200 MB files (the same style as benches/compare.sh for MCAP).
#
#   bash benches/formats_compare.sh
#   SKIP_BUILD=1 FORMATS="record carla" RUNS=10 bash benches/formats_compare.sh
#
# Steps:
#  1. cargo build --release --bin logsql --example gen_<format> for the selected
#     formats (skip with SKIP_BUILD=1; then the binaries must exist)
#  2. generate the files in target/bench-data/ if missing:
#       bench.record  gen_record (defaults: ~210 MB, 198 chunks of 500 ms, 5 channels:
#                     pose and chassis 100 Hz, obstacles 10 Hz, images 15 Hz 60 KB,
#                     point clouds 10 Hz ~110 KB; ~99 s)
#       bench.bddf    gen_bddf --mb 200 (7 series like a Spot download: RobotState 50 Hz,
#                     images 5 Hz 40-80 KB, IMU and battery POD blocks, gRPC
#                     requests/responses 10 Hz, operator comments; ~14 min)
#       bench.log     gen_carla (defaults: CARLA 0.9.16, 10,250 frames at 20 Hz, 150
#                     vehicles, 60 walkers, 40 traffic lights; ~200 MB)
#  3. a venv in target/bench-venv with cyber_record==0.1.13 and bosdyn-client==5.2.0
#     (whose bosdyn-core holds bosdyn.bddf)
#  4. checks that Python (benches/python_formats.py) and logsql agree on
#     (count, payload bytes) (CARLA: count, sum(x), sum(yaw)), full and windowed
#  5. times every command with hyperfine (--warmup 1 --runs RUNS; wall clock, whole
#     processes, warm page cache, start-up included on both sides):
#       Apollo  python Record.read_messages() (decoded, the public API)
#               python raw chunk-body walk (cyber_record internals; no public raw mode)
#               logsql SELECT count(*), sum(length(data)) FROM 'bench.record'
#               python and logsql: /apollo/localization/pose in a 10% window
#       BDDF    python DataReader.read(i, k) over every block (no SHA1 check)
#               python StreamDataReader (reads in file order, checks the SHA1)
#               logsql full scan --no-verify, and with the SHA1 verification (default)
#               python and logsql: bosdyn.api.RobotState in a 10% window
#       CARLA   logsql SELECT count(*), sum(x), sum(yaw) FROM positions('bench.log')
#               with --target-partitions 1 (one core) and with the default (all cores)
#               python struct decoder of the same records (a reference only)
#               logsql positions in a 10% window (WHERE log_time BETWEEN ...)
#       logsql SELECT 1 (process start-up, subtracted in the "net" figures)
#  6. peak RSS (/usr/bin/time -v) of every full scan; scan metrics (chunks_read,
#     chunks_total, bytes_read, messages_read, bytes_verified) from EXPLAIN ANALYZE
#  7. writes the results through benches/support/results.py ($BENCH_RESULTS/formats.json),
#     printed as markdown too: for each format its timings (formats-apollo, formats-bddf,
#     formats-carla) and scan metrics (formats-apollo-scan, ...), the issue's requirements
#     checked (formats-requirements), and formats, the table of docs/performance.md (`bash
#     benches/run.sh --update-docs formats`); with the number of cores busy with other
#     processes in the second before each timing ("busy cores before": the machine is
#     shared; a busy machine is flagged) and the load average at start and end.
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), FORMATS
# ("record bddf carla"), RUNS (5), SKIP_BUILD=1, BENCH_VENV (target/bench-venv),
# BENCH_DATA (target/bench-data), CACHE=as-is (leave the files' page cache as it is: by
# default each file is dropped from it and read once, as from disk; see settle_cache in
# benches/support/common.sh).
set -euo pipefail

# root, target, data, venv, logsql; log, gen, others, needs, settle_cache, bench_venv,
# logsql_row, sqlq, same, to_num, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
formats=${FORMATS:-record bddf carla}
runs=${RUNS:-5}
pyfmt=$root/benches/python_formats.py
has() { [[ " $formats " == *" $1 "* ]]; }
for f in $formats; do
    case $f in record | bddf | carla) ;; *) echo "unknown format '$f' in FORMATS" >&2; exit 2 ;; esac
done
needs hyperfine
results_start formats

gens=()
for f in $formats; do gens+=("gen_$f"); done
if [[ -z "${SKIP_BUILD:-}" ]]; then
    args=(--release --bin logsql)
    for g in "${gens[@]}"; do args+=(--example "$g"); done
    log "cargo build ${args[*]}"
    cargo build "${args[@]}" >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }

mkdir -p "$data"
record=$data/bench.record
bddf=$data/bench.bddf
carla=$data/bench.log
if has record && [[ ! -f $record ]]; then gen gen_record "$record"; fi
if has bddf && [[ ! -f $bddf ]]; then gen gen_bddf "$bddf" --mb 200; fi
if has carla && [[ ! -f $carla ]]; then gen gen_carla "$carla"; fi
for f in record bddf carla; do
    if has $f; then settle_cache "${!f}"; fi
done
settle_cache "$logsql"

bench_venv
if has record; then bench_venv cyber_record "cyber_record==0.1.13"; fi
if has bddf; then bench_venv bosdyn.bddf "bosdyn-client==5.2.0"; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vars=$tmp/vars # KEY=VALUE lines for the report
put() { printf '%s=%s\n' "$1" "$2" >>"$vars"; }
: >"$vars"
put formats "$formats"
put runs "$runs"
put nproc "$(nproc)"
put logsql "$logsql"
put load_start "$(cut -d' ' -f1-3 /proc/loadavg)"

# time_cmd NAME CMD...: hyperfine RUNS runs of CMD into $tmp/NAME.json (the report reads
# mean, stddev, min, user and system from it); records others() just before.
time_cmd() {
    put "load_$1" "$(others)"
    hyperfine_time "$@" >/dev/null
}
# rss NAME CMD...: peak RSS (kB) of one run of CMD.
rss() {
    local name=$1
    shift
    put "rss_$name" "$(/usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}')"
}
# plan NAME SQL [logsql options...]: EXPLAIN ANALYZE into $tmp/NAME.plan and the
# scan (DataSourceExec) metrics into vars as NAME_<metric> (numbers; DataFusion
# rounds counts to 4 digits with K/M/B/T suffixes) and NAME_<metric>_text (as printed).
plan() {
    local name=$1 sql=$2
    shift 2
    "$logsql" "$@" --format csv "EXPLAIN ANALYZE $sql" >"$tmp/$name.plan"
    local m v
    grep 'DataSourceExec' "$tmp/$name.plan" | head -n 1 >"$tmp/$name.scan" || true
    [[ -s "$tmp/$name.scan" ]] || { echo "no DataSourceExec in the plan of $sql:" >&2; cat "$tmp/$name.plan" >&2; exit 1; }
    for m in chunks_total chunks_read bytes_read messages_read bytes_verified output_rows; do
        v=$(plan_metric "$tmp/$name.scan" "$m")
        put "${name}_${m}_text" "$v"
        put "${name}_${m}" "$(to_num "$v")"
    done
}

time_cmd ls_startup "$logsql" --format csv "SELECT 1"

# ---- Apollo ------------------------------------------------------------------------
if has record; then
    f=$(sqlq "$record")
    put record_file "$record"
    put record_size "$(stat -L -c %s "$record")"
    topic=/apollo/localization/pose
    read -r w0 w1 < <("$py" "$pyfmt" record "$record" --window 10)
    q_full="SELECT count(*), sum(length(data)) FROM '$f'"
    q_win="$q_full WHERE topic = '$topic' AND log_time BETWEEN to_timestamp_nanos($w0) AND to_timestamp_nanos($w1)"
    log "Apollo: checking that cyber_record and logsql agree"
    py_raw=$("$py" "$pyfmt" record "$record" --raw)
    py_dec=$("$py" "$pyfmt" record "$record")
    ls_full=$(logsql_row "$q_full")
    same "Apollo full, raw walk" "$py_raw" "$ls_full"
    same "Apollo full, read_messages (ByteSize of the decoded messages)" "$py_dec" "$ls_full"
    py_win=$("$py" "$pyfmt" record "$record" --topic "$topic" --start "$w0" --end "$w1")
    ls_win=$(logsql_row "$q_win")
    same "Apollo window" "$py_win" "$ls_win"
    put record_full "$ls_full"
    put record_win "$ls_win"
    put record_topic "$topic"

    time_cmd rec_py_decoded "$py" "$pyfmt" record "$record"
    time_cmd rec_py_raw "$py" "$pyfmt" record "$record" --raw
    time_cmd rec_py_window "$py" "$pyfmt" record "$record" --topic "$topic" --start "$w0" --end "$w1"
    time_cmd rec_ls_full "$logsql" --format csv "$q_full"
    time_cmd rec_ls_window "$logsql" --format csv "$q_win"
    rss rec_py_decoded "$py" "$pyfmt" record "$record"
    rss rec_py_raw "$py" "$pyfmt" record "$record" --raw
    rss rec_ls_full "$logsql" --format csv "$q_full"
    rss rec_ls_window "$logsql" --format csv "$q_win"
    plan rec_full "$q_full"
    plan rec_win "$q_win"
fi

# ---- BDDF --------------------------------------------------------------------------
if has bddf; then
    f=$(sqlq "$bddf")
    put bddf_file "$bddf"
    put bddf_size "$(stat -L -c %s "$bddf")"
    topic=bosdyn.api.RobotState
    read -r w0 w1 < <("$py" "$pyfmt" bddf "$bddf" --window 10)
    q_full="SELECT count(*), sum(length(data)) FROM '$f'"
    q_win="$q_full WHERE topic = '$topic' AND log_time BETWEEN to_timestamp_nanos($w0) AND to_timestamp_nanos($w1)"
    log "BDDF: checking that bosdyn.bddf and logsql agree"
    py_full=$("$py" "$pyfmt" bddf "$bddf")
    py_stream=$("$py" "$pyfmt" bddf "$bddf" --stream)
    ls_full=$(logsql_row "$q_full")             # SHA1 verified (default)
    ls_full_nv=$(logsql_row --no-verify "$q_full")
    same "BDDF full, DataReader" "$py_full" "$ls_full"
    same "BDDF full, StreamDataReader (SHA1 checked)" "$py_stream" "$ls_full"
    same "BDDF full, logsql --no-verify" "$py_full" "$ls_full_nv"
    py_win=$("$py" "$pyfmt" bddf "$bddf" --topic "$topic" --start "$w0" --end "$w1")
    ls_win=$(logsql_row --no-verify "$q_win")
    same "BDDF window" "$py_win" "$ls_win"
    put bddf_full "$ls_full"
    put bddf_win "$ls_win"
    put bddf_topic "$topic"

    time_cmd bddf_py_reader "$py" "$pyfmt" bddf "$bddf"
    time_cmd bddf_py_stream "$py" "$pyfmt" bddf "$bddf" --stream
    time_cmd bddf_py_window "$py" "$pyfmt" bddf "$bddf" --topic "$topic" --start "$w0" --end "$w1"
    time_cmd bddf_ls_full_nv "$logsql" --no-verify --format csv "$q_full"
    time_cmd bddf_ls_full "$logsql" --format csv "$q_full"
    time_cmd bddf_ls_window_nv "$logsql" --no-verify --format csv "$q_win"
    time_cmd bddf_ls_window "$logsql" --format csv "$q_win"
    rss bddf_py_reader "$py" "$pyfmt" bddf "$bddf"
    rss bddf_py_stream "$py" "$pyfmt" bddf "$bddf" --stream
    rss bddf_ls_full_nv "$logsql" --no-verify --format csv "$q_full"
    rss bddf_ls_full "$logsql" --format csv "$q_full"
    rss bddf_ls_window_nv "$logsql" --no-verify --format csv "$q_win"
    plan bddf_full_nv "$q_full" --no-verify
    plan bddf_full "$q_full"
    plan bddf_win "$q_win" --no-verify
    plan bddf_win_v "$q_win"
fi

# ---- CARLA -------------------------------------------------------------------------
if has carla; then
    f=$(sqlq "$carla")
    put carla_file "$carla"
    put carla_size "$(stat -L -c %s "$carla")"
    read -r w0 w1 < <("$py" "$pyfmt" carla "$carla" --window 10)
    q_full="SELECT count(*), sum(x), sum(yaw) FROM positions('$f')"
    q_win="$q_full WHERE log_time BETWEEN to_timestamp_nanos($w0) AND to_timestamp_nanos($w1)"
    log "CARLA: checking that the Python decoder and logsql agree"
    py_full=$("$py" "$pyfmt" carla "$carla")
    ls_full=$(logsql_row --target-partitions 1 "$q_full")
    py_win=$("$py" "$pyfmt" carla "$carla" --start "$w0" --end "$w1")
    ls_win=$(logsql_row --target-partitions 1 "$q_win")
    # Counts equal, sums equal to 1e-9 (summation order differs).
    "$py" - "$py_full" "$ls_full" "$py_win" "$ls_win" <<'EOF' || exit 1
import sys
for what, p, l in (("full", sys.argv[1], sys.argv[2]), ("window", sys.argv[3], sys.argv[4])):
    p, l = p.split(), l.split()
    ok = len(p) == len(l) == 3 and p[0] == l[0] and all(
        abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a))) for a, b in zip(p[1:], l[1:]))
    if not ok:
        sys.exit(f"MISMATCH (CARLA {what}): python={p} logsql={l}")
    print(f"== agree (CARLA {what}): {' '.join(l)}", file=sys.stderr)
EOF
    put carla_full "$ls_full"
    put carla_win "$ls_win"

    time_cmd carla_ls_full_p1 "$logsql" --target-partitions 1 --format csv "$q_full"
    time_cmd carla_ls_full "$logsql" --format csv "$q_full"
    time_cmd carla_ls_window "$logsql" --target-partitions 1 --format csv "$q_win"
    time_cmd carla_py "$py" "$pyfmt" carla "$carla"
    rss carla_ls_full_p1 "$logsql" --target-partitions 1 --format csv "$q_full"
    rss carla_ls_full "$logsql" --format csv "$q_full"
    rss carla_ls_window "$logsql" --target-partitions 1 --format csv "$q_win"
    rss carla_py "$py" "$pyfmt" carla "$carla"
    plan carla_full "$q_full" --target-partitions 1
    plan carla_win "$q_win" --target-partitions 1
fi
put load_end "$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- report ------------------------------------------------------------------------
"$py" - "$vars" "$tmp" <<'EOF'
import importlib.metadata, json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "benches", "support"))
from results import Results

v = {}
for line in open(sys.argv[1]):
    k, _, val = line.rstrip("\n").partition("=")
    v[k] = val
tmp = sys.argv[2]
nproc = int(v["nproc"])
busy_at = 0.3  # cores busy with other processes (over 1 s, just before) above which timings suffer
res = Results.resume(os.environ["BENCH_NAME"])

def t(name):
    r = json.load(open(os.path.join(tmp, name + ".json")))["results"][0]
    return r

def mb(x):
    return f"{int(x) / 1e6:.1f}"

busy = {}
seen = set()

def row(label, name, rss=None):
    r = t(name)
    load = float(v.get("load_" + name, "0"))
    seen.add(name)
    if load > busy_at:
        busy[name] = (label, load)
    rss_kb = v.get("rss_" + (rss or name), "")
    rss_s = f"{int(rss_kb) / 1024:.0f}" if rss_kb else ""
    cpu = r["user"] + r["system"]
    return [label, f"{r['mean']:.3f}", f"{r['stddev'] or 0:.3f}", f"{r['min']:.3f}", f"{cpu:.3f}", rss_s, f"{load:.2f}"]

setting = (f"logsql: {v['logsql']}; runs: {v['runs']} per command (hyperfine --warmup 1), warm page cache "
           f"({os.environ.get('BENCH_CACHE_STATE', '?')}), {nproc} cores; load average at start {v['load_start']}, "
           f"at end {v['load_end']}")

def timings(id, title, rows):
    res.table(id, f"{title}. {setting}",
              ["command", "mean (s)", "stddev (s)", "min (s)", "user+sys (s)", "peak RSS (MB)", "busy cores before"],
              rows, "-rrrrrr")

def scan_table(id, what, cases, verified=False):
    cols = ["logsql scan metrics", "chunks_read / chunks_total", "bytes_read", "messages_read"]
    cols += ["bytes_verified"] if verified else []
    rows = []
    for label, k in cases:
        r = [label, f"{v[k + '_chunks_read_text']} / {v[k + '_chunks_total_text']}", v[k + "_bytes_read_text"],
             v[k + "_messages_read_text"]]
        rows.append(r + ([v[k + "_bytes_verified_text"]] if verified else []))
    res.table(id, f"logsql's scan metrics of the {what} file (as EXPLAIN ANALYZE prints them, 4 significant digits)",
              cols, rows, "-rrr" + ("r" if verified else ""))

def version(dist):
    try:
        return f"{dist} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return None

ok = lambda b: "yes" if b else "**NO**"
startup = t("ls_startup")["mean"]
fmts = v["formats"].split()

def human_count(n):
    # DataFusion's human_readable_count, to compare an exact count with a printed metric
    for lim, unit in ((1e12, " T"), (1e9, " B"), (1e6, " M"), (1e3, " K")):
        if n >= lim:
            x = n / lim
            return f"{x:.1f}{unit}" if x >= 100 else f"{x:.2f}{unit}"
    return str(n)

verdicts = []
doc = []  # the rows of docs/performance.md's table

if "record" in fmts:
    n, b = map(int, v["record_full"].split())
    wn, wb = map(int, v["record_win"].split())
    size = int(v["record_size"])
    timings("formats-apollo",
            f"Apollo: {os.path.basename(v['record_file'])}, {mb(size)} MB, {n} messages, {mb(b)} MB payload; "
            f"window: {v['record_topic']}, 10% of the span, {wn} messages", [
        row("python cyber_record 0.1.13: Record.read_messages() (decoded; public API)", "rec_py_decoded"),
        row("python cyber_record 0.1.13: raw chunk walk (internals, undecoded)", "rec_py_raw"),
        row("python cyber_record: read_messages(pose, 10% window)", "rec_py_window", rss="-"),
        row("logsql: SELECT count(*), sum(length(data))", "rec_ls_full"),
        row("logsql: pose, 10% window", "rec_ls_window"),
        row("logsql: SELECT 1 (process start-up)", "ls_startup", rss="-"),
    ])
    scan_table("formats-apollo-scan", "Apollo", (("full scan", "rec_full"), ("pose, 10% window", "rec_win")))
    full, raw, dec = t("rec_ls_full")["mean"], t("rec_py_raw")["mean"], t("rec_py_decoded")["mean"]
    s_min = t("rec_py_decoded")["min"] / t("rec_ls_full")["min"]
    net = lambda x: (x - startup)
    s_dec, s_raw = dec / full, raw / full
    frac = int(v["rec_win_bytes_read"]) / int(v["rec_full_bytes_read"])
    verdicts += [
        ("Apollo: full scan >= 5x faster than cyber_record read_messages()",
         f"{s_dec:.2f}x of means ({s_min:.2f}x of minima; less logsql start-up: {net(dec) / net(full):.1f}x); "
         f"vs the undecoded raw walk: {s_raw:.1f}x",
         ok(s_dec >= 5)),
        ("Apollo: one channel, 10% window reads <= 20% of the body bytes",
         f"{100 * frac:.1f}% ({v['rec_win_bytes_read_text']}B of {v['rec_full_bytes_read_text']}B)", ok(frac <= 0.20)),
    ]
    doc += [
        [f"Apollo, {mb(size)} MB, {v['rec_full_chunks_total_text']} chunks", "every message (`Record.read_messages()`)",
         f"{dec:.3f} s", f"{full:.3f} s", f"{s_dec:.1f}x"],
        ["", "the same against cyber_record's undecoded chunk walk (internal API)", "", "", f"{s_raw:.1f}x"],
        ["", f"`{v['record_topic']}` in a 10% window", "", "",
         f"{v['rec_win_chunks_read_text']}/{v['rec_win_chunks_total_text']} chunks, {100 * frac:.1f}% of the bytes"],
    ]

if "bddf" in fmts:
    n, b = map(int, v["bddf_full"].split())
    wn, wb = map(int, v["bddf_win"].split())
    size = int(v["bddf_size"])
    timings("formats-bddf",
            f"BDDF: {os.path.basename(v['bddf_file'])}, {mb(size)} MB, {n} blocks, {mb(b)} MB payload; "
            f"window: {v['bddf_topic']}, 10% of the span, {wn} blocks, {wb} payload bytes", [
        row("python bosdyn.bddf 5.2.0: DataReader.read(i, k), every block (no SHA1 check)", "bddf_py_reader"),
        row("python bosdyn.bddf 5.2.0: StreamDataReader, every block (SHA1 checked)", "bddf_py_stream"),
        row("python DataReader: RobotState, 10% window", "bddf_py_window", rss="-"),
        row("logsql --no-verify: SELECT count(*), sum(length(data))", "bddf_ls_full_nv"),
        row("logsql (SHA1 verified, default): same", "bddf_ls_full"),
        row("logsql --no-verify: RobotState, 10% window", "bddf_ls_window_nv"),
        row("logsql (SHA1 verified): RobotState, 10% window", "bddf_ls_window", rss="-"),
        row("logsql: SELECT 1 (process start-up)", "ls_startup", rss="-"),
    ])
    scan_table("formats-bddf-scan", "BDDF", (
        ("full scan --no-verify", "bddf_full_nv"), ("full scan (verify)", "bddf_full"),
        ("RobotState window --no-verify", "bddf_win"), ("RobotState window (verify)", "bddf_win_v")), verified=True)
    nv, ver = t("bddf_ls_full_nv")["mean"], t("bddf_ls_full")["mean"]
    rd, st = t("bddf_py_reader")["mean"], t("bddf_py_stream")["mean"]
    s_nv = rd / nv
    s_nv_min = t("bddf_py_reader")["min"] / t("bddf_ls_full_nv")["min"]
    msgs_text = v["bddf_win_messages_read_text"]
    msgs_ok = msgs_text == human_count(wn)
    br = int(v["bddf_win_bytes_read"])
    per_row = (br - wb) / max(wn, 1)
    # bytes_read is printed to 4 digits: allow half a unit of its last digit
    txt = v["bddf_win_bytes_read_text"].split()
    unit = {"K": 1e3, "M": 1e6, "B": 1e9}.get(txt[1] if len(txt) > 1 else "", 1)
    slack = 0.5 * unit * (10 ** -len(txt[0].split(".")[1]) if "." in txt[0] else 1)
    bytes_ok = wb - slack <= br <= wb + 100 * wn + slack
    verdicts += [
        ("BDDF: full scan (--no-verify) >= 4x faster than DataReader",
         f"{s_nv:.2f}x of means ({s_nv_min:.2f}x of minima; less logsql start-up: {(rd - startup) / (nv - startup):.1f}x)",
         ok(s_nv >= 4)),
        ("BDDF: full scan with SHA1 verification (default), for reference",
         f"{rd / ver:.1f}x DataReader (which does not verify); {st / ver:.1f}x StreamDataReader (which does)", ""),
        ("BDDF: one series, 10% window: messages_read = window rows",
         f"{msgs_text} vs {wn} rows", ok(msgs_ok)),
        ("BDDF: same: bytes_read = window payload + small headers (<= 100 B/block)",
         f"{v['bddf_win_bytes_read_text']}B vs {wb} payload bytes (~{per_row:.0f} B/block over)", ok(bytes_ok)),
    ]
    window = (f"exactly the window's {wn:,} blocks" if msgs_ok
              else f"{msgs_text} blocks for the window's {wn:,} (**not exactly**)")
    doc += [
        [f"BDDF, {mb(size)} MB", "every block (`DataReader.read`, no SHA1 check)", f"{rd:.3f} s",
         f"{nv:.3f} s (`--no-verify`)", f"{s_nv:.2f}x"],
        ["", "the same with the SHA1 check (`StreamDataReader` / logsql default)", f"{st:.3f} s", f"{ver:.3f} s",
         f"{st / ver:.1f}x"],
        ["", f"`{v['bddf_topic']}` in a 10% window", "", "",
         f"{window}: {br / 1e6:.2f} MB read for {wb / 1e6:.2f} MB of payload (block headers)"],
    ]

if "carla" in fmts:
    n = int(v["carla_full"].split()[0])
    wn = int(v["carla_win"].split()[0])
    size = int(v["carla_size"])
    timings("formats-carla",
            f"CARLA: {os.path.basename(v['carla_file'])}, {mb(size)} MB, {n} position records; "
            f"window: 10% of the span, {wn} records", [
        row("logsql --target-partitions 1: SELECT count(*), sum(x), sum(yaw) FROM positions(..)", "carla_ls_full_p1"),
        row(f"logsql (target partitions = {nproc} cores): same", "carla_ls_full"),
        row("logsql --target-partitions 1: positions, 10% window", "carla_ls_window"),
        row("python struct decoder (python_formats.py; reference, not an official reader)", "carla_py"),
        row("logsql: SELECT 1 (process start-up)", "ls_startup", rss="-"),
    ])
    scan_table("formats-carla-scan", "CARLA",
               (("positions, full (1 partition)", "carla_full"), ("positions, 10% window", "carla_win")))
    r1 = t("carla_ls_full_p1")
    rate = size / 1e6 / r1["mean"]
    rate_net = size / 1e6 / (r1["mean"] - startup)
    rate_cpu = size / 1e6 / (r1["user"] + r1["system"])
    rate_all = size / 1e6 / t("carla_ls_full")["mean"]
    frac = int(v["carla_win_bytes_read"]) / size
    verdicts += [
        ("CARLA: positions decoded at >= 100 MB/s per core (1 partition)",
         f"{rate:.0f} MB/s whole process; {rate_net:.0f} MB/s less start-up; {rate_cpu:.0f} MB/s per CPU-second; "
         f"({rate_all:.0f} MB/s with {nproc} partitions)", ok(rate >= 100)),
        ("CARLA: 10% window reads <= 15% of the file",
         f"{100 * frac:.1f}% ({v['carla_win_bytes_read_text']}B of {size} B)", ok(frac <= 0.15)),
    ]
    doc += [
        [f"CARLA, {mb(size)} MB, {v['carla_full_chunks_total_text']} chunks",
         "`SELECT count(*), sum(x), sum(yaw) FROM positions(...)`",
         f"{t('carla_py')['mean']:.3f} s (a `struct` decoder, reference only)", f"{r1['mean']:.3f} s (1 partition)",
         f"{rate:,.0f} MB/s of file on one partition, {rate_all:,.0f} MB/s on {nproc}"],
        ["", "positions in a 10% window", "", "",
         f"{v['carla_win_chunks_read_text']}/{v['carla_win_chunks_total_text']} chunks, {100 * frac:.1f}% of the file"],
    ]

res.table("formats-requirements", "The requirements checked", ["requirement", "measured", "met"],
          [list(r) for r in verdicts], "--c")
versions = ", ".join(x for x in (version("cyber_record") if "record" in fmts else None,
                                 version("bosdyn-client") if "bddf" in fmts else None) if x)
# The table of docs/performance.md (## Apollo records, BDDF files and CARLA recordings).
res.table("formats", "Apollo records, BDDF files and CARLA recordings against their Python readers"
          + (f" ({versions})" if versions else "") + f": means of {v['runs']} runs",
          ["file", "what", "Python", "logsql", ""], doc, "--rrr")
res.note("Peak RSS of each full scan is in the tables above (/usr/bin/time -v, one run). "
         "Scan metrics are as EXPLAIN ANALYZE prints them (4 significant digits).")
if busy:
    res.note(f"**Machine busy**: {len(busy)} of {len(seen)} timings started with more than {busy_at} of the "
             f"{nproc} cores busy with other processes (max {max(x for _, x in busy.values()):.2f}): "
             + ", ".join([l for l, _ in busy.values()][:4]) + (", ..." if len(busy) > 4 else "")
             + ". Those timings are pessimistic: rerun when idle.")
else:
    res.note(f"Machine idle: every timing started with at most {busy_at} cores busy with other processes.")
EOF
results_done

#!/usr/bin/env bash
# benches/raw_compare.sh: logsql's full scans against the tightest raw reader of
# each format, as whole processes on the ~200 MB benchmark files.
#
#   bash benches/raw_compare.sh
#   SKIP_BUILD=1 FORMATS="bag-lz4 carla" RUNS=10 PERF_RUNS=20 bash benches/raw_compare.sh
#
# The baselines (benches/baselines/, examples *_baseline) are single-threaded
# programs over an mmap that use only the format's own decompressor crate and
# none of logsql's code:
#   mcap      the official `mcap` crate's IndexedReader (benches/baselines/mcap.rs)
#   mcap-floor  the work logsql's MCAP scan cannot leave out, on one thread: pread of each
#             chunk, the zstd crate's one-shot decompressor, the chunk CRC-32 (which the
#             crate's IndexedReader skips), message records counted (mcap_floor.rs)
#   bag-lz4   hand-written record walker + lz4_flex frame decoder (bag.rs)
#   bag-bz2   the same walker + the bzip2 crate (bag.rs)
#   record    Apollo: hand-written section and protobuf wire walker (apollo.rs; records
#             are not compressed)
#   bddf      hand-written block walker (bddf.rs; no compression), without the SHA1, and
#             bddf-sha1: with the sha1 crate's digest of the file checked first
#   carla     hand-written packet walker summing the Position records (carla.rs)
# logsql runs with its defaults (all cores as partitions); the queries:
#   SELECT count(*), sum(length(data)) FROM 'FILE'               (mcap, mcap-floor, bags, record, bddf)
#   the same with --no-verify for bddf, and with the default (SHA1 verified in the scan's
#   pass by the partition owning the file's start) for bddf-sha1 (the script checks that
#   bytes_verified > 0)
#   SELECT count(*), sum(x), sum(yaw) FROM positions('FILE')     (carla, as formats_compare.sh)
#
# Steps:
#  1. cargo build --release --bin logsql and the baselines (skip with SKIP_BUILD=1),
#     plus the generators of missing files
#  2. the files in $BENCH_DATA (default target/bench-data), generated when missing with the
#     generators and options of compare.sh, bag_compare.sh and formats_compare.sh:
#     bench.mcap, bench-lz4.bag, bench-bz2.bag, bench.record, bench.bddf, bench.log
#  3. checks that logsql and the baseline print the same answer (CARLA: equal counts,
#     sums equal to 1e-9 relative, as the summation order differs)
#  4. times both with hyperfine (wall clock: --warmup 1 --runs RUNS, -N, whole processes,
#     warm page cache), then their CPU: PERF_RUNS runs of each, logsql and the baseline in
#     turn (so a slow spell of the machine falls on both), each process under its own
#     `perf stat -e task-clock,page-faults`
#  5. writes the results (benches/support/results.py) to $BENCH_RESULTS/raw.json and prints
#     them as markdown: raw-detail, wall and CPU (task-clock: median of the processes, then
#     mean) of both sides and the ratios (of the medians, then of the means), with the
#     cores busy with other processes in the second before each format's timings, and
#     logsql's `SELECT 1` (process start-up, included in every logsql figure); and raw-full,
#     the table of docs/performance.md (`bash benches/run.sh --update-docs raw`)
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/logsql-target), FORMATS ("mcap mcap-floor
# bag-lz4 bag-bz2 record bddf bddf-sha1 carla"), RUNS (10), PERF_RUNS (10), SKIP_BUILD=1,
# BENCH_DATA (target/bench-data), CACHE=as-is (leave the files' page cache as it is: by
# default each file is dropped from it and read once, as from disk; see settle_cache in
# benches/support/common.sh for why).
set -euo pipefail

# root, target, data, logsql; log, gen, others, needs, logsql_row, sqlq, results_*.
source "$(dirname "${BASH_SOURCE[0]}")/support/common.sh"
formats=${FORMATS:-mcap mcap-floor bag-lz4 bag-bz2 record bddf bddf-sha1 carla}
runs=${RUNS:-10}
perf_runs=${PERF_RUNS:-10}
ex=$target/release/examples
needs hyperfine perf python3
results_start raw

# file, generator and baseline of each format
declare -A file gen_cmd baseline
file[mcap]=$data/bench.mcap
file[mcap-floor]=$data/bench.mcap
file[bag-lz4]=$data/bench-lz4.bag
file[bag-bz2]=$data/bench-bz2.bag
file[record]=$data/bench.record
file[bddf]=$data/bench.bddf
file[bddf-sha1]=$data/bench.bddf
file[carla]=$data/bench.log
gen_cmd[mcap]="gen_mcap --seconds 376"
gen_cmd[mcap-floor]="gen_mcap --seconds 376"
gen_cmd[bag-lz4]="gen_bag --compression lz4"
gen_cmd[bag-bz2]="gen_bag --compression bz2"
gen_cmd[record]="gen_record"
gen_cmd[bddf]="gen_bddf --mb 200"
gen_cmd[bddf-sha1]="gen_bddf --mb 200"
gen_cmd[carla]="gen_carla"
baseline[mcap]=mcap_baseline
baseline[mcap-floor]=mcap_floor
baseline[bag-lz4]=bag_baseline
baseline[bag-bz2]=bag_baseline
baseline[record]=apollo_baseline
baseline[bddf]=bddf_baseline
baseline[bddf-sha1]=bddf_baseline
baseline[carla]=carla_baseline
for f in $formats; do
    [[ -n "${file[$f]:-}" ]] || { echo "unknown format '$f' in FORMATS" >&2; exit 2; }
done

if [[ -z "${SKIP_BUILD:-}" ]]; then
    args=(--release --bin logsql)
    declare -A seen=()
    for f in $formats; do
        b=${baseline[$f]}
        [[ -n "${seen[$b]:-}" ]] || args+=(--example "$b")
        seen[$b]=1
        g=${gen_cmd[$f]%% *}
        if [[ ! -f ${file[$f]} && -z "${seen[$g]:-}" ]]; then
            args+=(--example "$g")
            seen[$g]=1
        fi
    done
    log "cargo build ${args[*]}"
    cargo build "${args[@]}" >&2
fi
[[ -x "$logsql" ]] || { echo "missing $logsql (build it, or unset SKIP_BUILD)" >&2; exit 1; }
mkdir -p "$data"
for f in $formats; do
    out=${file[$f]}
    [[ -f $out ]] && continue
    read -r g gargs <<<"${gen_cmd[$f]}"
    # shellcheck disable=SC2086 # gargs: the generator's options
    gen "$g" "$out" $gargs
done

# Each input once (bddf and bddf-sha1 time the same file).
mapfile -t inputs < <(for f in $formats; do echo "${file[$f]}"; done | sort -u)
settle_cache "${inputs[@]}" "$logsql" $(for f in $formats; do echo "$ex/${baseline[$f]}"; done | sort -u)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wall NAME CMD...: hyperfine into $tmp/NAME.json.
wall() {
    local name=$1
    shift
    log "timing $name (wall)"
    hyperfine -N --warmup 1 --runs "$runs" --style none --export-json "$tmp/$name.json" \
        "$(printf '%q ' "$@")" >&2
}
# cpu NAME: one process of the command in the array cmd_NAME under perf stat, its
# task-clock and page faults appended to $tmp/NAME.perf (CSV).
cpu() {
    local -n cmd="cmd_${1//-/_}"
    perf stat -x, -e task-clock,page-faults -o "$tmp/$1.perf" --append -- "${cmd[@]}" >/dev/null
}
# cpu_runs NAME...: PERF_RUNS rounds, each running every NAME's command once, in turn.
cpu_runs() {
    log "timing $* (CPU, $perf_runs rounds)"
    local i n
    for ((i = 0; i < perf_runs; i++)); do
        for n in "$@"; do cpu "$n"; done
    done
}

rows=$tmp/rows # format|file|answer|busy
: >"$rows"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for f in $formats; do
    path=${file[$f]}
    q=$(sqlq "$path")
    base=("$ex/${baseline[$f]}" "$path")
    ls_args=()
    sql="SELECT count(*), sum(length(data)) FROM '$q'"
    case $f in
        bddf) ls_args=(--no-verify) ;;
        # The default verifies the SHA1 (bytes_verified > 0, checked below).
        bddf-sha1) base+=(--sha1) ;;
        carla) sql="SELECT count(*), sum(x), sum(yaw) FROM positions('$q')" ;;
    esac
    [[ -x "${base[0]}" ]] || { echo "missing ${base[0]} (build it, or unset SKIP_BUILD)" >&2; exit 1; }
    a_base=$("${base[@]}")
    a_ls=$(logsql_row "${ls_args[@]}" "$sql")
    python3 - "$f" "$a_base" "$a_ls" <<'EOF' || exit 1
import sys
f, b, l = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
if f == "carla":
    ok = len(b) == len(l) == 3 and b[0] == l[0] and all(
        abs(float(x) - float(y)) <= 1e-9 * max(1.0, abs(float(x))) for x, y in zip(b[1:], l[1:]))
else:
    ok = b == l
if not ok:
    sys.exit(f"MISMATCH ({f}): baseline={b} logsql={l}")
print(f"== agree ({f}): {' '.join(l)}", file=sys.stderr)
EOF
    if [[ $f == bddf* ]]; then
        verified=$("$logsql" "${ls_args[@]}" --format csv "EXPLAIN ANALYZE $sql" | grep -o 'bytes_verified=[^,]*' | head -n 1)
        log "$f: logsql ${ls_args[*]}: $verified"
        if [[ $f == bddf-sha1 && $verified == bytes_verified=0 ]]; then
            echo "logsql ${ls_args[*]} did not verify the SHA1 of $path" >&2
            exit 1
        fi
    fi
    busy=$(others)
    # The commands, as the arrays cpu() runs (cmd_<format>_logsql, cmd_<format>_base).
    declare -n cl="cmd_${f//-/_}_logsql" cb="cmd_${f//-/_}_base"
    cl=("$logsql" "${ls_args[@]}" --format csv "$sql")
    cb=("${base[@]}")
    wall "$f-logsql" "${cl[@]}"
    wall "$f-base" "${cb[@]}"
    unset -n cl cb
    cpu_runs "$f-logsql" "$f-base"
    printf '%s|%s|%s|%s\n' "$f" "$path" "$a_ls" "$busy" >>"$rows"
done
cmd_startup=("$logsql" --format csv "SELECT 1")
wall startup "${cmd_startup[@]}"
cpu_runs startup
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$rows" "$tmp" "$logsql" "$runs" "$perf_runs" "$(nproc)" "$load_start" "$load_end" <<'EOF'
import json, os, statistics, sys
sys.path.insert(0, os.path.join(os.getcwd(), "benches", "support"))
from results import Results

rows, tmp, logsql, runs, perf_runs, nproc, load_start, load_end = sys.argv[1:]
labels = {
    "mcap": ("MCAP (zstd)", "official `mcap` crate, IndexedReader"),
    "mcap-floor": ("MCAP (zstd)", "floor: pread + zstd + chunk CRC-32"),
    "bag-lz4": ("ROS1 bag, lz4", "record walker + lz4_flex"),
    "bag-bz2": ("ROS1 bag, bz2", "record walker + bzip2"),
    "record": ("Apollo record", "section + protobuf wire walker"),
    "bddf": ("BDDF, --no-verify", "block walker"),
    "bddf-sha1": ("BDDF, SHA1 verified (default)", "sha1 of the file + block walker"),
    "carla": ("CARLA positions", "packet walker, Position sums"),
}


def wall(name):
    r = json.load(open(os.path.join(tmp, name + ".json")))["results"][0]
    return r["mean"], r["median"], r["min"]


def perf(name):
    """Median and mean task-clock (ms) of the processes, and their median page faults."""
    out = {"task-clock": [], "page-faults": []}
    for line in open(os.path.join(tmp, name + ".perf")):
        p = line.strip().split(",")
        if len(p) >= 3 and not line.startswith("#"):
            try:
                out.setdefault(p[2].split(":")[0], []).append(float(p[0]))
            except ValueError:
                pass
    nan = float("nan")
    tc, pf = out["task-clock"], out["page-faults"]
    return (statistics.median(tc) if tc else nan, statistics.mean(tc) if tc else nan,
            statistics.median(pf) if pf else nan)


# The labels of docs/performance.md's table (bag-bz2 is in its prose, not its table).
doc_labels = {
    "mcap": ("MCAP (zstd)", "official `mcap` crate"),
    "mcap-floor": ("MCAP (zstd)", "the floor: pread + zstd + CRC-32"),
    "bag-lz4": ("ROS1 bag, lz4", "record walker + `lz4_flex`"),
    "record": ("Apollo record", "section + protobuf wire walker"),
    "bddf": ("BDDF, `--no-verify`", "block walker"),
    "bddf-sha1": ("BDDF, SHA1 verified", "SHA1 of the file + block walker"),
    "carla": ("CARLA positions", "packet walker, Position sums"),
}
res = Results.resume(os.environ["BENCH_NAME"])
detail, full, values = [], [], []
for line in open(rows):
    f, path, answer, busy = line.rstrip("\n").split("|")
    lw, lw_med, lw_min = wall(f + "-logsql")
    bw, bw_med, bw_min = wall(f + "-base")
    lc, lc_mean, lpf = perf(f + "-logsql")
    bc, bc_mean, bpf = perf(f + "-base")
    name, base = labels[f]
    mb = os.stat(path).st_size / 1e6
    detail.append([f"{name} ({mb:.0f})", base, answer, f"{lw:.3f} (median {lw_med:.3f}, min {lw_min:.3f})",
                   f"{bw:.3f} (median {bw_med:.3f}, min {bw_min:.3f})",
                   f"**{lw / bw:.2f}x** ({lw_med / bw_med:.2f}x)", f"{lc:.1f} (mean {lc_mean:.1f})",
                   f"{bc:.1f} (mean {bc_mean:.1f})", f"**{lc / bc:.2f}x** ({lc_mean / bc_mean:.2f}x)",
                   f"{lpf:.0f} / {bpf:.0f}", busy])
    values.append({"format": f, "file_mb": mb, "logsql_wall_s": lw, "baseline_wall_s": bw,
                   "logsql_cpu_ms_median": lc, "logsql_cpu_ms_mean": lc_mean,
                   "baseline_cpu_ms_median": bc, "baseline_cpu_ms_mean": bc_mean, "busy_cores": float(busy)})
    if f in doc_labels:
        ratio = f"{lc / bc:.2f}x"
        full.append([*doc_labels[f], f"{lw / bw:.2f}x", f"{lc:.1f} ms", f"{bc:.1f} ms",
                     (f"**{ratio}**" if f == "mcap" else ratio) + f" ({lc_mean / bc_mean:.2f}x)"])
sw, sw_med, sw_min = wall("startup")
sc, sc_mean, spf = perf("startup")
detail.append(["logsql SELECT 1 (process start-up)", "", "", f"{sw:.3f} (median {sw_med:.3f}, min {sw_min:.3f})",
               "", "", f"{sc:.1f} (mean {sc_mean:.1f})", "", "", f"{spf:.0f}", ""])
values.append({"format": "startup", "logsql_wall_s": sw, "logsql_cpu_ms_median": sc, "logsql_cpu_ms_mean": sc_mean})
setting = (f"hyperfine -N --warmup 1 --runs {runs}, {perf_runs} processes of each under perf stat, logsql and "
           f"baseline in turn; warm page cache ({os.environ.get('BENCH_CACHE_STATE', '?')}), {nproc} cores; "
           f"load average at start {load_start}, at end {load_end}")
res.table("raw-detail",
          f"logsql: {logsql}; {setting}. Wall: mean, median, min; the wall ratio of the means, then of the medians. "
          "CPU: task-clock median, then mean",
          ["format (file MB)", "baseline", "answer", "logsql wall (s)", "baseline wall (s)", "wall ratio",
           "logsql CPU (ms)", "baseline CPU (ms)", "CPU ratio (medians; means)", "page faults logsql / baseline",
           "busy cores before"], detail, "---rrrrrrrr", values=values)
res.table("raw-full",
          f"Every format's full scan against a raw single-threaded reader ({setting}). "
          f"CPU: median of {perf_runs} processes (mean in brackets); wall: ratio of hyperfine's means",
          ["format", "baseline", "wall", "logsql CPU", "baseline CPU", "CPU ratio of medians (of means)"],
          full, "--rrrr")
EOF
results_done

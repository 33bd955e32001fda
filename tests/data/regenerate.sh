#!/usr/bin/env bash
# Rebuilds every recording in tests/data/ with the repository's own generators
# (examples/gen_*.rs). The generators are deterministic, so the files come out
# byte for byte the same on every machine.
#
#   bash tests/data/regenerate.sh           # rewrite the files in tests/data/
#   bash tests/data/regenerate.sh --check   # write them to a temp dir and compare
#                                           # with the committed ones (exit 1 on drift)
#
# Uses CARGO_TARGET_DIR when set (like every cargo command). Building the
# examples resolves features as `cargo test` does, so after a `cargo test` this
# only links the generators.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

check=0
case "${1:-}" in
--check) check=1 ;;
"") ;;
*)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac

cargo build --quiet --example gen_mcap --example gen_bag --example gen_record \
    --example gen_bddf --example gen_carla --example gen_db3 --example gen_images --example gen_robot
bin="${CARGO_TARGET_DIR:-$root/target}/debug/examples"

if [ "$check" = 1 ]; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
else
    out="$root/tests/data"
fi

# The exact commands; tests/it/self_contained.rs and docs/testing.md
# describe what each file holds.
"$bin/gen_mcap" "$out/demo.mcap" --seconds 10 --jpeg 64x48 --chunk-size 65536 >/dev/null
"$bin/gen_bag" "$out/demo.bag" --compression lz4 --seconds 2 --chunk-size 16384 --image-bytes 1000 >/dev/null
"$bin/gen_record" "$out/demo.record" --size-kb 150 --image-bytes 500 --lidar-points 40 \
    --chunk-interval-ms 500 >/dev/null
"$bin/gen_bddf" "$out/demo.bddf" --kb 100 --image-bytes 1000 2>/dev/null
"$bin/gen_carla" "$out/demo.log" --frames 100 --vehicles 6 --walkers 3 --traffic-lights 2 >/dev/null 2>&1
"$bin/gen_db3" "$out/demo.db3" --seconds 2 2>/dev/null
"$bin/gen_images" "$out/images.mcap"
"$bin/gen_robot" "$out/robot.mcap" --seconds 2 --width 64 --height 48 --wrist >/dev/null

if [ "$check" = 1 ]; then
    status=0
    for f in demo.mcap demo.bag demo.record demo.bddf demo.log demo.db3 images.mcap robot.mcap; do
        if cmp -s "$out/$f" "tests/data/$f"; then
            echo "tests/data/$f: same as the generator writes"
        else
            echo "tests/data/$f: DIFFERS from what the generator writes now (run $0)" >&2
            status=1
        fi
    done
    exit "$status"
fi
ls -l tests/data/demo.*

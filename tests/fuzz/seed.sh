#!/usr/bin/env bash
# Seeds the fuzz corpora from the shared fixtures, outside the repository.
#
#   bash tests/fuzz/seed.sh [TARGET...]     (default: every target)
#
# Format targets (mcap bag bag_write apollo bddf carla ros2 db3_write) get copies of the fixture files
# of their format, ros2_metadata the fixtures' metadata.yaml files; decoder targets (ros1msg cdr protobuf json) get
# <type, schema, payload> inputs cut from the MCAP decode fixtures by the
# `seed` example of the fuzz crate; `points` gets the generated clouds of the
# `seed_points` example, `images` PNGs, JPEGs and raw images of every encoding
# from the `seed_images` example. Existing corpus files are kept.
#
# Environment: LOGSQL_FIXTURES (default: <repo>/../shared/fixtures),
# LOGSQL_FUZZ_HOME (default: $HOME/.cache/logsql-fuzz; corpora in corpus/<target>).
set -euo pipefail

fuzz_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$fuzz_dir/../.." && pwd)
fixtures=${LOGSQL_FIXTURES:-$repo/../shared/fixtures}
home=${LOGSQL_FUZZ_HOME:-$HOME/.cache/logsql-fuzz}
corpus=$home/corpus
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$home/target}

all_targets=(mcap bag bag_write apollo bddf carla ros2 db3_write ros2_metadata ros1msg cdr protobuf json points images)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

if [ ! -d "$fixtures" ]; then
    echo "seed.sh: no fixtures at $fixtures (set LOGSQL_FIXTURES)" >&2
    exit 1
fi

# Copies the files found by `find "$@"` into corpus/<target>, prefixed with
# their directory so that equal names do not collide.
copy_files() {
    local target=$1
    shift
    mkdir -p "$corpus/$target"
    local n=0 f
    while IFS= read -r -d '' f; do
        local rel=${f#"$fixtures"/}
        cp -f "$f" "$corpus/$target/${rel//\//_}"
        chmod u+w "$corpus/$target/${rel//\//_}"
        n=$((n + 1))
    done < <(find "$@" -type f -print0)
    echo "$target: $n fixture files"
}

decoders_done=0
for t in "${targets[@]}"; do
    case $t in
        mcap) copy_files mcap "$fixtures/mcap" -name '*.mcap' ;;
        bag) copy_files bag "$fixtures/rosbag" -name '*.bag' ;;
        bag_write) copy_files bag_write "$fixtures/rosbag" -name '*.bag' ;;
        apollo) copy_files apollo "$fixtures/apollo" -name '*.record*' ;;
        bddf) copy_files bddf "$fixtures/bddf" -name '*.bddf' ;;
        carla) copy_files carla "$fixtures/carla" -maxdepth 1 -name '*.log' ;;
        ros2) copy_files ros2 "$fixtures/ros2/sqlite3" -name '*.db3' ;;
        db3_write) copy_files db3_write "$fixtures/ros2/sqlite3" -name '*.db3' ;;
        ros2_metadata) copy_files ros2_metadata "$fixtures/ros2" -name metadata.yaml ;;
        images)
            cargo run --quiet --release --manifest-path "$fuzz_dir/Cargo.toml" \
                --example seed_images -- "$corpus/images"
            ;;
        ros1msg | cdr | protobuf | json)
            if [ $decoders_done = 0 ]; then
                cargo run --quiet --release --manifest-path "$fuzz_dir/Cargo.toml" \
                    --example seed -- "$fixtures/mcap/decode" "$corpus"
                decoders_done=1
            fi
            ;;
        points)
            cargo run --quiet --release --manifest-path "$fuzz_dir/Cargo.toml" \
                --example seed_points -- "$corpus/points"
            ;;
        *)
            echo "seed.sh: unknown target $t (known: ${all_targets[*]})" >&2
            exit 2
            ;;
    esac
done

#!/bin/sh
# The C example back end as `refinterp check` calls it (examples/c_backend/README.md):
#
#     run.sh DIR INPUTS OUTPUTS [--float32]
#
# DIR is a golden case folder, INPUTS its inputs.npz, OUTPUTS where to write the outputs.
# It reads the operator from DIR/case.json, compiles minirt.c on first use and runs it.
# Exit 0: outputs written; 77: unsupported (the reason on stderr); 1: an invalid case,
# rejected; 2: anything else (the harness reports a failure).
#
# The compiled program is cached in $MINIRT_CACHE (default: $TMPDIR or /tmp, under
# refinterp-minirt-<uid>) and rebuilt whenever minirt.c is newer. $CC overrides `cc`.

set -u
if [ $# -lt 3 ]; then
    echo "usage: run.sh DIR INPUTS OUTPUTS [--float32]" >&2
    exit 2
fi
dir=$1 inputs=$2 outputs=$3
shift 3

case_json=$dir/case.json
if [ ! -f "$case_json" ]; then
    echo "run.sh: no case.json in '$dir'" >&2
    exit 2
fi

# case.json is canonical JSON (docs/golden.md: sorted keys, two-space indentation, one key a
# line), so a top-level key is a line starting with exactly two spaces and a quote: sed and
# grep are enough, and a nested key (an input called "error") cannot be mistaken for one.
top_level_string() {  # the value of a top-level string key, or nothing
    sed -n "s/^  \"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" "$case_json"
}

# An error case is an invalid invocation: a conforming implementation rejects it. (This
# example reads that from the manifest; a real back end finds it by validating.)
if grep -q '^  "error": {' "$case_json"; then
    code=$(sed -n '/^  "error": {/,/^  }/s/^    "code": "\(.*\)",\{0,1\}$/\1/p' "$case_json")
    echo "run.sh: rejected: the invocation is invalid (refinterp raises ${code:-an error})" >&2
    exit 1
fi

kind=$(top_level_string kind)
if [ "$kind" != operator ]; then
    echo "run.sh: only operator cases are supported (this is a ${kind:-?} case)" >&2
    exit 77
fi
operator=$(top_level_string operator)
case $operator in
    math.add | math.sub | math.mul | math.div | math.neg | math.abs | math.exp | math.log | \
        math.sqrt | math.sin | math.cos | math.tanh | nn.relu) ;;
    *)
        echo "run.sh: operator ${operator:-?} is not supported" >&2
        exit 77
        ;;
esac
# Empty objects and arrays are written `{}` and `[]` on the key's line.
if ! grep -q '^  "attributes": {},\{0,1\}$' "$case_json"; then
    attributes=$(sed -n '/^  "attributes": {$/,/^  }/s/^    "\([^"]*\)":.*/\1/p' "$case_json" |
        tr '\n' ' ')
    echo "run.sh: attributes are not supported (this case sets: ${attributes% })" >&2
    exit 77
fi
if ! grep -q '^  "generics": \[\],\{0,1\}$' "$case_json"; then
    echo "run.sh: generic arguments are not supported" >&2
    exit 77
fi

# Compile on first use (and when minirt.c changed); concurrent runs (-j N) each build to a
# temporary name and rename it into place, so none ever runs a half-written program.
here=$(cd "$(dirname "$0")" && pwd)
source=$here/minirt.c
cache=${MINIRT_CACHE:-${TMPDIR:-/tmp}/refinterp-minirt-$(id -u)}
program=$cache/minirt
if [ ! -x "$program" ] || [ "$source" -nt "$program" ]; then
    mkdir -p "$cache" || exit 2
    temp=$program.$$.tmp
    if ! ${CC:-cc} -O2 -std=c99 -o "$temp" "$source" -lm; then
        rm -f "$temp"
        echo "run.sh: cannot compile $source" >&2
        exit 2
    fi
    mv -f "$temp" "$program" || exit 2
fi

exec "$program" "$@" "$operator" "$inputs" "$outputs"

#!/usr/bin/env bash
# A stand-in C compiler and archiver for scripts/cross-check.sh: a type-check for another
# target runs the build scripts of -sys crates (ring's) but links nothing, so every object
# and archive they ask for is written empty. It answers cc-rs's probes as a clang would.
# Roles, told apart by the arguments:
#   compiler: -E FILE (family probe), --version, -? (refused: not cl-style), -c ... -o OUT
#   archiver: cq/cqD/s ARCHIVE OBJS... (ar style) or -out:ARCHIVE OBJS... (lib.exe style)
set -euo pipefail

empty_archive() { printf '!<arch>\n' >"$1"; }

case "${1:-}" in
--version | -v)
    echo "cross-check stand-in cc (writes empty objects)"
    exit 0
    ;;
'-?' | /?) exit 1 ;;
c* | r* | s)
    # ar style: the archive follows the mode letters.
    if [[ "$1" =~ ^[a-zA-Z]+$ && $# -ge 2 ]]; then
        [[ -e "$2" ]] || empty_archive "$2"
        exit 0
    fi
    ;;
esac

out=""
preprocess=0
prev=""
for arg in "$@"; do
    case "$prev" in
    -o) out="$arg" ;;
    esac
    case "$arg" in
    -E) preprocess=1 ;;
    -out:* | /out:* | -OUT:* | /OUT:*)
        empty_archive "${arg#*:}"
        exit 0
        ;;
    -Fo* | /Fo*) out="${arg#??Fo}" ;;
    -o?*) out="${arg#-o}" ;;
    esac
    prev="$arg"
done

if [[ $preprocess == 1 ]]; then
    # cc-rs reads the family from the messages of its probe file; answer as clang.
    echo '#pragma message "clang"'
    exit 0
fi
if [[ -n "$out" ]]; then
    : >"$out"
fi
exit 0

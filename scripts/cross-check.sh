#!/usr/bin/env bash
# Type-checks the workspace (every target kind) for macOS and Windows with `cargo clippy
# -D warnings` (CI runs the aarch64-apple-darwin leg; .ci/run says why not the others), using a Rust toolchain taken from Debian's packages at the pinned
# versions below and unpacked into .cross/ of the checkout. The machine's own Rust is never used or
# changed; the build goes to target/cross, so the Linux build cache is untouched.
#
#   scripts/cross-check.sh                  all targets
#   scripts/cross-check.sh x86_64-apple-darwin
#   CROSS_CHECK=report scripts/cross-check.sh   prints the errors but exits 0 (default: strict)
#   CROSS_CHECK_STEPS="clippy check" ...        also runs a plain `cargo check` after clippy
#   scripts/cross-check.sh --toolchain      only unpacks the toolchain (scripts/windows-run.sh)
#
# Clippy alone is the default: clippy-driver is rustc with lints added, so a clean `clippy -D
# warnings` is a clean `cargo check` too; a second `cargo check` re-checks every workspace crate
# (the dependencies are shared) for ~1 minute per target on 2 cores and finds nothing more.
#
# Nothing is linked: ring's build script gets scripts/cross-stand-in-cc.sh as its C compiler and
# archiver, which writes empty objects.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pin: Debian package=version, one a line (bookworm-security). To move to a newer toolchain,
# read the versions with `apt-get update && apt-cache policy rustc-web libllvm22 ...`, and write
# them here; the next run unpacks them afresh. The libraries are those the binaries need that a
# bare Debian 12 lacks (scripts/cross-check.sh names any that is still missing).
PINS="
rustc-web=1.96.0+dfsg1-1~deb12u2
cargo-web=1.96.0+dfsg1-1~deb12u2
rust-web-clippy=1.96.0+dfsg1-1~deb12u2
rust-web-src=1.96.0+dfsg1-1~deb12u2
libstd-rust-web-1.96=1.96.0+dfsg1-1~deb12u2
libstd-rust-web-dev=1.96.0+dfsg1-1~deb12u2
libllvm22=1:22.1.8-1~deb12u1
libgit2-1.5=1.5.1+ds-1+deb12u2
libhttp-parser2.9=2.9.4-5
libmbedtls14=2.28.3-1
libmbedcrypto7=2.28.3-1
libmbedx509-1=2.28.3-1
"

TARGETS=(aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-msvc)
MODE="${CROSS_CHECK:-strict}"
case "$MODE" in
strict | report) ;;
*)
    echo "cross-check: CROSS_CHECK must be strict or report, not '$MODE'" >&2
    exit 2
    ;;
esac
read -r -a STEPS <<<"${CROSS_CHECK_STEPS:-clippy}"
for step in "${STEPS[@]}"; do
    case "$step" in
    clippy | check) ;;
    *)
        echo "cross-check: CROSS_CHECK_STEPS takes clippy and check, not '$step'" >&2
        exit 2
        ;;
    esac
done
toolchain_only=0
if [[ "${1:-}" == --toolchain ]]; then
    toolchain_only=1
    shift
fi
if [[ $# -gt 0 ]]; then
    TARGETS=("$@")
fi

checkout="$(pwd)"
cross="$checkout/.cross"
root="$cross/root"
stamp="$cross/pins"
pins_text="$(printf '%s\n' $PINS)"

# Every pinned package=version is known to apt; refreshes the lists once if not.
missing_pins() {
    local pin
    for pin in $PINS; do
        apt-cache madison "${pin%%=*}" 2>/dev/null |
            awk -F' *[|] *' -v v="${pin#*=}" '$2 == v {found = 1} END {exit !found}' ||
            echo "$pin"
    done
}

install_toolchain() {
    local missing pin pkg candidate
    if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
        echo "cross-check: needs apt-get and dpkg-deb (Debian or Ubuntu) to fetch the pinned toolchain" >&2
        exit 1
    fi
    missing="$(missing_pins)"
    if [[ -n "$missing" ]]; then
        echo "cross-check: apt-get update (apt does not know: $(echo $missing))"
        apt-get update -qq
        missing="$(missing_pins)"
    fi
    if [[ -n "$missing" ]]; then
        echo "cross-check: Debian no longer serves these pinned packages:" >&2
        for pin in $missing; do
            pkg="${pin%%=*}"
            candidate="$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')"
            echo "  $pin (served now: ${candidate:-none})" >&2
        done
        echo "update PINS at the top of scripts/cross-check.sh to the served versions" >&2
        echo "(apt-cache policy PACKAGE), then run it again" >&2
        exit 1
    fi

    echo "cross-check: unpacking the pinned toolchain into .cross/"
    rm -rf "$root" "$stamp" "$cross/debs"
    mkdir -p "$cross/debs" "$root"
    # apt's download user cannot write into a root-owned checkout; the file is checked anyway.
    (cd "$cross/debs" && apt-get download -qq $PINS 2>&1 | grep -v 'Download is performed unsandboxed' || true)
    for pin in $PINS; do
        pkg="${pin%%=*}"
        if ! compgen -G "$cross/debs/${pkg}_*.deb" >/dev/null; then
            echo "cross-check: apt-get download $pin fetched nothing" >&2
            exit 1
        fi
    done
    local deb
    for deb in "$cross/debs"/*.deb; do
        dpkg-deb -x "$deb" "$root"
    done
    rm -rf "$cross/debs"
    # Only library/ of the Rust sources is needed (by -Zbuild-std); the rest is ~370 MB.
    local src
    for src in "$root"/usr/src/rustc-*; do
        find "$src" -mindepth 1 -maxdepth 1 ! -name library ! -name Cargo.lock ! -name Cargo.toml \
            -exec rm -rf {} +
    done
    rm -rf "$root/usr/share/doc" "$root/usr/share/man"
    printf '%s\n' "$pins_text" >"$stamp"
}

if [[ -f "$stamp" && "$(cat "$stamp")" == "$pins_text" && -x "$root/usr/bin/cargo" ]]; then
    echo "cross-check: pinned toolchain already in .cross/"
else
    install_toolchain
fi

libdir="$(echo "$root"/usr/lib/*-linux-gnu)"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unresolved="$(for f in "$root"/usr/bin/{cargo,rustc,clippy-driver,cargo-clippy} "$libdir"/*.so*; do
    ldd "$f" 2>/dev/null | awk '/not found/ {print $1}'
done | sort -u)"
if [[ -n "$unresolved" ]]; then
    echo "cross-check: the toolchain in .cross/ needs libraries this machine lacks: $(echo $unresolved)" >&2
    echo "add the Debian packages that ship them to PINS in scripts/cross-check.sh" >&2
    exit 1
fi
if [[ $toolchain_only == 1 ]]; then
    exit 0
fi

# Only the unpacked toolchain: its bin first in PATH (cargo finds cargo-clippy there, which finds
# clippy-driver beside itself), an own CARGO_HOME, no wrapper or toolchain override from outside.
export PATH="$root/usr/bin:$PATH"
export RUSTC="$root/usr/bin/rustc"
export CARGO_HOME="$cross/cargo-home"
export CARGO_TARGET_DIR="$checkout/target/cross"
export RUSTC_BOOTSTRAP=1
unset RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER RUSTUP_TOOLCHAIN RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
cargo="$root/usr/bin/cargo"
stand_in="$checkout/scripts/cross-stand-in-cc.sh"
# cc-rs asks xcrun for the SDK unless SDKROOT names a folder; nothing is read from it.
mkdir -p "$cross/sdk/MacOSX.sdk"
export SDKROOT="$cross/sdk/MacOSX.sdk"
export MACOSX_DEPLOYMENT_TARGET=11.0

"$cargo" --version
"$RUSTC" --version

logs="$CARGO_TARGET_DIR/logs"
mkdir -p "$logs"

# The distinct errors of a cargo log: each error's message with its first location.
distinct_errors() {
    awk '
        /^error(\[E[0-9]+\])?: / {
            if (msg != "") print msg
            msg = $0
            if (msg ~ /^error: (could not compile|aborting due to|warnings? being treated)/) msg = ""
            next
        }
        /^ *--> / && msg != "" { print msg " @ " $2; msg = ""; next }
        END { if (msg != "") print msg }
    ' "$1" | sort -u
}

declare -A result
failed=0
for target in "${TARGETS[@]}"; do
    var="${target//-/_}"
    export "CC_$var=$stand_in" "AR_$var=$stand_in"
    for step in "${STEPS[@]}"; do
        log="$logs/$target.$step.log"
        start=$SECONDS
        args=("$step" -Zbuild-std=std,panic_abort --target "$target" --workspace --all-targets --locked --keep-going)
        if [[ $step == clippy ]]; then
            args+=(-- -D warnings)
        fi
        echo "cross-check: cargo ${args[*]}"
        status=0
        "$cargo" "${args[@]}" >"$log" 2>&1 || status=$?
        took=$((SECONDS - start))
        distinct_errors "$log" >"$log.errors"
        count="$(wc -l <"$log.errors")"
        if [[ $status == 0 ]]; then
            result["$target $step"]="ok (${took}s)"
        else
            failed=1
            result["$target $step"]="FAILED: $count distinct errors (${took}s), log $log"
            sed -n 's/^/    /; 1,15p' "$log.errors"
            if [[ $count == 0 ]]; then
                tail -n 20 "$log" | sed 's/^/    /'
            fi
        fi
        echo "cross-check: $target $step: ${result["$target $step"]}"
    done
    unset "CC_$var" "AR_$var"
done

echo "cross-check summary (mode $MODE, ${SECONDS}s in all):"
for target in "${TARGETS[@]}"; do
    for step in "${STEPS[@]}"; do
        printf '  %-24s %-6s %s\n' "$target" "$step" "${result["$target $step"]}"
    done
done
if [[ $failed == 1 && $MODE == strict ]]; then
    echo "cross-check: failed (CROSS_CHECK=report prints the same and exits 0)" >&2
    exit 1
fi

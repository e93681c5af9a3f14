#!/usr/bin/env bash
# `make install` and `make uninstall` (README "Install"): the tree under DESTDIR checked file by
# file with modes, the unit's ExecStart following the prefix, the default configuration never
# replacing the operator's, nothing left after uninstall. Then the build itself: the hardening
# the binaries carry (readelf), the caller's CPPFLAGS/CFLAGS/LDFLAGS on the command lines,
# -Werror only under `make test`, plain `make` installing no package, one version everywhere,
# the fuzzers linking the fuzz library. About 2 s (the binaries are built already).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
EVICTCTL=${EVICTCTL:-$BUILD_DIR/evictctl}
tmp=$(mktemp -d /tmp/evictd-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mk() { make -s --no-print-directory BUILD="$BUILD_DIR" "$@"; }

for bin in "$EVICTD" "$EVICTCTL"; do
	[ -x "$bin" ] || { fail "$bin is built (make $bin)"; done_testing; exit; }
done
version=$(mk version)

# tree DIR: "MODE path" of every file and symbolic link under DIR, sorted.
tree() { (cd "$1" && find . \( -type f -o -type l \) -printf '%m %P\n' | LC_ALL=C sort); }
# expect_tree NAME DIR WANT
expect_tree() {
	local got; got=$(tree "$2")
	if [ "$got" = "$3" ]; then pass "$1"; else fail "$1" "$(diff <(echo "$3") <(echo "$got"))"; fi
}

# ---- make install, default prefix /usr/local ------------------------------------------
d=$tmp/local
out=$(mk install DESTDIR="$d" 2>&1); rc=$?
check "make install DESTDIR=... exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || echo "$out" | sed 's/^/#   /'
expect_tree "the /usr/local tree: binaries, man pages, unit, tmpfiles.d, config (modes too)" "$d" \
"644 etc/evictd/config.yaml
644 usr/local/lib/systemd/system/evictd.service
644 usr/local/lib/systemd/system/evictd.socket
644 usr/local/lib/tmpfiles.d/evictd.conf
644 usr/local/share/man/man8/evictctl.8
644 usr/local/share/man/man8/evictd.8
755 usr/local/sbin/evictctl
755 usr/local/sbin/evictd"
check "the installed evictd is the built one" cmp -s "$EVICTD" "$d/usr/local/sbin/evictd"
check "the installed evictctl is the built one" cmp -s "$EVICTCTL" "$d/usr/local/sbin/evictctl"
unit=$d/usr/local/lib/systemd/system/evictd.service
check "the unit's ExecStart is /usr/local/sbin/evictd" grep -q '^ExecStart=/usr/local/sbin/evictd ' "$unit"
check "the unit names no /usr/sbin path" bash -c "! grep -q /usr/sbin/ '$unit'"
check "the rest of the unit is the shipped one" \
	cmp -s "$unit" <(sed 's|/usr/sbin/|/usr/local/sbin/|g' tools/deploy/evictd.service)
check "the metrics socket the unit requires is the shipped one" \
	cmp -s tools/deploy/evictd.socket "$d/usr/local/lib/systemd/system/evictd.socket"
check "the config is the commented default" cmp -s tools/deploy/config.yaml.example "$d/etc/evictd/config.yaml"
check "tmpfiles.d makes /var/lib/evictd 0700 root" \
	grep -qE '^d /var/lib/evictd 0700 root root' "$d/usr/local/lib/tmpfiles.d/evictd.conf"
for page in evictd evictctl; do
	check "$page.8 names the version ($version)" \
		grep -qF ".TH ${page^^} 8 \"2025\" \"evictd $version\"" "$d/usr/local/share/man/man8/$page.8"
done
# ---- the operator's configuration is never replaced or removed ------------------------
echo "# mine" >>"$d/etc/evictd/config.yaml"
mk install DESTDIR="$d" >/dev/null 2>&1
check "a second make install keeps an existing config.yaml" grep -qx '# mine' "$d/etc/evictd/config.yaml"
mk uninstall DESTDIR="$d" >/dev/null 2>&1
expect_tree "make uninstall keeps a changed config.yaml and removes the rest" "$d" "644 etc/evictd/config.yaml"
rm -f "$d/etc/evictd/config.yaml"

# ---- PREFIX=/usr, SYSCONFDIR, UNITDIR; uninstall leaves no file -----------------------
d=$tmp/usr
mk install DESTDIR="$d" PREFIX=/usr SYSCONFDIR=/opt/etc UNITDIR=/lib/systemd/system >/dev/null 2>&1
expect_tree "PREFIX=/usr SYSCONFDIR=/opt/etc UNITDIR=/lib/systemd/system" "$d" \
"644 lib/systemd/system/evictd.service
644 lib/systemd/system/evictd.socket
644 opt/etc/evictd/config.yaml
644 usr/lib/tmpfiles.d/evictd.conf
644 usr/share/man/man8/evictctl.8
644 usr/share/man/man8/evictd.8
755 usr/sbin/evictctl
755 usr/sbin/evictd"
check "with PREFIX=/usr the unit's ExecStart is /usr/sbin/evictd" \
	grep -q '^ExecStart=/usr/sbin/evictd ' "$d/lib/systemd/system/evictd.service"
mk uninstall DESTDIR="$d" PREFIX=/usr SYSCONFDIR=/opt/etc UNITDIR=/lib/systemd/system >/dev/null 2>&1
expect_tree "make uninstall leaves no file" "$d" ""
check "make uninstall removes the emptied config directory" [ ! -e "$d/opt/etc/evictd" ]

# ---- hardening in the built binaries --------------------------------------------------
for bin in "$EVICTD" "$EVICTCTL"; do
	dyn=$(readelf -d "$bin"); hdr=$(readelf -lW "$bin")
	check "$bin: BIND_NOW" grep -qE '\(FLAGS\).*BIND_NOW' <<<"$dyn"
	check "$bin: FLAGS_1 NOW PIE" grep -qE 'FLAGS_1.*NOW PIE' <<<"$dyn"
	check "$bin: a GNU_RELRO segment" grep -q GNU_RELRO <<<"$hdr"
	syms=$(readelf --dyn-syms -W "$bin")
	check "$bin: stack protector (__stack_chk_fail)" grep -q __stack_chk_fail <<<"$syms"
	check "$bin: FORTIFY (__*_chk functions)" grep -qE ' __[a-z_]+_chk(@|$)' <<<"$syms"
done

# ---- flags: the caller's are used (last, so they win), the build's own are kept -------
cmds=$(mk -n -B "$BUILD_DIR/evictd" CPPFLAGS=-DMARK_CPP CFLAGS='-O1 -DMARK_C' LDFLAGS=-Wl,-z,mark-ld)
compile=$(grep -- '-c user/core/rank.c' <<<"$cmds")
link=$(grep -- "-o $BUILD_DIR/evictd\$" <<<"$cmds")
check "CPPFLAGS and CFLAGS reach the compiler" grep -q -- '-DMARK_CPP.*-O1 -DMARK_C' <<<"$compile"
check "the build's own -std, -I and hardening stay" \
	grep -qE -- '-std=gnu11 .*(-Iuser|-iquote user).*-D_FORTIFY_SOURCE=2.*-fstack-protector-strong -fPIE' <<<"$compile"
check "LDFLAGS reach the link, after the hardening defaults" grep -q -- '-pie -Wl,-z,relro -Wl,-z,now -Wl,-z,mark-ld' <<<"$link"
compile=$(mk -n -B "$BUILD_DIR/obj/core/rank.o" CPPFLAGS=-D_FORTIFY_SOURCE=3 | grep -- '-c user/core/rank.c')
check "a caller's _FORTIFY_SOURCE level replaces the default" \
	bash -c '! grep -q -- "-D_FORTIFY_SOURCE=2" <<<"$1" && grep -q -- "-D_FORTIFY_SOURCE=3" <<<"$1"' _ "$compile"
compile=$(mk -n -B "$BUILD_DIR/obj/core/rank.o" CFLAGS=-O0 | grep -- '-c user/core/rank.c')
check "no FORTIFY at -O0 (glibc would warn)" bash -c '! grep -q _FORTIFY_SOURCE <<<"$1"' _ "$compile"

# ---- -Werror in make test only; plain make installs nothing ---------------------------
compile=$(mk -n -B "$BUILD_DIR/obj/core/rank.o" | grep -- '-c user/core/rank.c')
check "plain make compiles without -Werror" bash -c '! grep -q -- -Werror <<<"$1"' _ "$compile"
compile=$(mk -n -B test 2>/dev/null | grep -- '-c user/core/rank.c' | head -1)
check "make test compiles with -Werror" grep -q -- -Werror <<<"$compile"
check "plain make runs no tools/install-deps.sh" bash -c '! make -n -B BUILD="$1" all | grep -q install-deps' _ "$BUILD_DIR"
check "make deps runs tools/install-deps.sh" bash -c 'make -n -B BUILD="$1" deps | grep -q "install-deps.sh build test"' _ "$BUILD_DIR"

# ---- one version --------------------------------------------------------------------------
check "evictd --version is the Makefile's version ($version)" [ "$("$EVICTD" --version)" = "evictd $version" ]
check "evictctl --version is the same" [ "$("$EVICTCTL" --version)" = "evictctl $version" ]
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$PWD" ] && [ -z "$(git tag -l)" ]; then
	check "untagged: VERSION plus the commit ($version)" \
		grep -qxE "$(sed 's/\./\\./g' VERSION)-g[0-9a-f]{7,}(-dirty)?" <<<"$version"
fi
check "EVICTD_VERSION overrides it" [ "$(mk version EVICTD_VERSION=9.8.7)" = 9.8.7 ]
check "the image is tagged with it" grep -qF 'tag=$(EVICTD_VERSION)' Makefile
check "no literal version left in the sources" \
	bash -c '! grep -rn "\"0\.1\.0\"" user doc/evictd.8 doc/evictctl.8'

# ---- the fuzzers link the one fuzz library --------------------------------------------
link=$(mk -n -B "$BUILD_DIR/fuzz/fuzz_quantity" | grep -- "-o $BUILD_DIR/fuzz/fuzz_quantity\$")
check "a fuzzer links libevictd-fuzz.a, compiles no library source" \
	bash -c 'grep -q libevictd-fuzz.a <<<"$1" && ! grep -q "user/.*\.c" <<<"$1"' _ "$link"
done_testing

#!/usr/bin/env bash
# The Debian package (debian/, README "Install"): `make deb` runs dpkg-buildpackage -us -uc -b
# on a copy of the sources; the .deb's files and modes (dpkg-deb -c), its control data (the
# conffile, the maintainer scripts dh_installsystemd and dh_installtmpfiles wrote, the purge),
# its version against VERSION and debian/changelog, Build-Depends against
# tools/install-deps.sh, the packaged binary's hardening, and lintian with no error (its
# warnings shown as comments). systemd/30-deb-package in the guest installs and purges it.
# About 30 s (a full build in the copy).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
for tool in dpkg-buildpackage dh; do
	if ! command -v "$tool" >/dev/null; then
		echo "1..0 # skip no $tool: tools/install-deps.sh test installs dpkg-dev, debhelper and lintian"
		exit 0
	fi
done
tmp=$(mktemp -d /tmp/evictd-deb-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
deb=$BUILD_DIR/evictd.deb

out=$(make -s --no-print-directory BUILD="$BUILD_DIR" deb 2>&1); rc=$?
if [ $rc -ne 0 ] || [ ! -f "$deb" ]; then
	fail "make deb builds $deb" "$out"
	done_testing; exit
fi
pass "make deb builds $deb (dpkg-buildpackage -us -uc -b)"

# ---- files ----------------------------------------------------------------------------
files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); print $1, $6 }' | LC_ALL=C sort -k2)
want="-rw-r--r-- etc/evictd/config.yaml
-rw-r--r-- lib/systemd/system/evictd.service
-rw-r--r-- lib/systemd/system/evictd.socket
-rw-r--r-- usr/lib/tmpfiles.d/evictd.conf
-rwxr-xr-x usr/sbin/evictctl
-rwxr-xr-x usr/sbin/evictd
-rw-r--r-- usr/share/doc/evictd/changelog.Debian.gz
-rw-r--r-- usr/share/doc/evictd/changelog.gz
-rw-r--r-- usr/share/doc/evictd/copyright
-rw-r--r-- usr/share/man/man8/evictctl.8.gz
-rw-r--r-- usr/share/man/man8/evictd.8.gz"
if [ "$files" = "$want" ]; then pass "dpkg-deb -c: the files and their modes"
else fail "dpkg-deb -c: the files and their modes" "$(diff <(echo "$want") <(echo "$files"))"; fi
dpkg-deb -x "$deb" "$tmp/root"
dpkg-deb -e "$deb" "$tmp/control"
check "the unit starts /usr/sbin/evictd" grep -q '^ExecStart=/usr/sbin/evictd ' "$tmp/root/lib/systemd/system/evictd.service"
check "the config is the commented default" cmp -s tools/deploy/config.yaml.example "$tmp/root/etc/evictd/config.yaml"
check "/etc/evictd/config.yaml is a conffile" grep -qx /etc/evictd/config.yaml "$tmp/control/conffiles"

# ---- maintainer scripts ------------------------------------------------------------------
check "postinst enables the unit (dh_installsystemd)" grep -q 'deb-systemd-helper.*enable.*evictd.service' "$tmp/control/postinst"
check "postinst starts the unit" \
	bash -c 'grep -q "_dh_action=start" "$1" && grep -q "deb-systemd-invoke \$_dh_action .evictd.service" "$1"' _ "$tmp/control/postinst"
check "postinst makes the state directory (systemd-tmpfiles --create evictd.conf)" \
	grep -q 'systemd-tmpfiles.*--create.*evictd.conf' "$tmp/control/postinst"
check "prerm stops the unit" grep -q 'deb-systemd-invoke stop.*evictd.service' "$tmp/control/prerm"
check "postinst enables the metrics socket the unit requires" \
	grep -q 'deb-systemd-helper.*enable.*evictd.socket' "$tmp/control/postinst"
# The purge branch, run for real against a scratch root: it removes exactly the state and logs.
mkdir -p "$tmp/purge/var/lib/evictd" "$tmp/purge/var/log/evictd" "$tmp/purge/var/lib/other"
sed -n '/if \[ "$1" = "purge" \]; then/,/^fi/p' debian/evictd.postrm | grep 'rm -rf' |
	sed "s#/var/#$tmp/purge/var/#g" >"$tmp/purge.sh"
sh "$tmp/purge.sh"
check "postrm purge removes /var/lib/evictd and /var/log/evictd, nothing else" \
	[ ! -e "$tmp/purge/var/lib/evictd" -a ! -e "$tmp/purge/var/log/evictd" -a -d "$tmp/purge/var/lib/other" ]
check "the packaged postrm has that purge branch" grep -q 'rm -rf /var/lib/evictd /var/log/evictd' "$tmp/control/postrm"
check "the packaged postrm removes the emptied BPF pin directory on remove and purge" \
	grep -q 'rmdir /sys/fs/bpf/evictd' "$tmp/control/postrm"

# ---- versions and dependencies ------------------------------------------------------------
upstream=$(cat VERSION)
pkg_version=$(dpkg-deb -f "$deb" Version)
check "the package version ($pkg_version) is VERSION ($upstream) plus a Debian revision" \
	[ "${pkg_version%-*}" = "$upstream" ]
check "debian/changelog's version is the package's" [ "$(dpkg-parsechangelog -S Version)" = "$pkg_version" ]
out=$("$tmp/root/usr/sbin/evictd" --version 2>&1)
check "the packaged evictd reports it ($out)" [ "$out" = "evictd $upstream" ]
out=$("$tmp/root/usr/sbin/evictctl" --version 2>&1)
check "the packaged evictctl reports it ($out)" [ "$out" = "evictctl $upstream" ]
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libbpf1 libyaml-0-2 libjson-c5 libsystemd0 libmicrohttpd12 libcurl4; do
	check "Depends names $lib (shlibs)" grep -qE "(^|, )$lib( |,|$)" <<<"$depends"
done
build_deps=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' debian/control | grep -v '^#' |
	sed -e 's/^Build-Depends://' -e '/^[A-Z]/d' | tr ',' '\n' | sed 's/ //g; /^$/d; /^debhelper-compat/d' | LC_ALL=C sort)
script_deps=$(awk '/^build_pkgs=\(/ { f = 1 } f { print } f && /\)/ { exit }' tools/install-deps.sh |
	sed 's/build_pkgs=(//; s/)//' | tr ' \t' '\n\n' | sed '/^$/d; /^make$/d; /^gcc$/d' | LC_ALL=C sort -u)
check "Build-Depends is tools/install-deps.sh's build group (less build-essential)" \
	[ "$build_deps" = "$script_deps" ]
check "tools/install-deps.sh's test group installs dpkg-dev, debhelper, lintian" \
	bash -c 'for p in dpkg-dev debhelper lintian; do grep "^test_pkgs=" -A2 tools/install-deps.sh | grep -qw "$p" || exit 1; done'

# ---- hardening of the packaged binary (dpkg-buildflags hardening=+all) --------------------
dyn=$(readelf -d "$tmp/root/usr/sbin/evictd")
check "packaged evictd: BIND_NOW, PIE" bash -c 'grep -q "(FLAGS).*BIND_NOW" <<<"$1" && grep -q "FLAGS_1.*NOW PIE" <<<"$1"' _ "$dyn"
check "packaged evictd: GNU_RELRO" bash -c 'readelf -lW "$1" | grep -q GNU_RELRO' _ "$tmp/root/usr/sbin/evictd"

# ---- lintian ------------------------------------------------------------------------------
if ! command -v lintian >/dev/null; then
	fail "lintian is installed (tools/install-deps.sh test)"
else
	changes=$(ls "$BUILD_DIR"/deb/evictd_*.changes 2>/dev/null | head -1)
	out=$(lintian "${changes:-$deb}" 2>&1 | grep -v 'running with root privileges')
	errors=$(grep '^E:' <<<"$out")
	if [ -z "$errors" ]; then pass "lintian reports no error"; else fail "lintian reports no error" "$errors"; fi
	grep -E '^[WI]:' <<<"$out" | sed 's/^/# lintian: /'
fi
done_testing

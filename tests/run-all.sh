#!/usr/bin/env bash
# Run every test suite and print one TAP stream per suite, then "N passed, N failed".
# Usage: tests/run-all.sh [SUITE...]  suites: unit unit-san fuzz bpf cli vm (default: all)
# Environment: BUILD (default build), FUZZ_SECONDS (default 20 per target).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit unit-san fuzz bpf cli vm)

passed=0 failed=0 skipped=0
failures=()
log_dir="$BUILD/test-logs"
mkdir -p "$log_dir"

# Count a TAP stream: "ok N", "not ok N", "# SKIP" on ok lines counts as skipped.
count_tap() {
	local file=$1 name=$2
	local ok notok skip
	# cmocka writes a skipped test as "not ok N - name # SKIP": a skip, not a failure.
	ok=$(grep -E '^ok [0-9]+' "$file" | grep -cvE '# (SKIP|skip)' || true)
	skip=$(grep -cE '^(not )?ok [0-9]+.*# (SKIP|skip)' "$file" || true)
	notok=$(grep -E '^not ok [0-9]+' "$file" | grep -cvE '# (SKIP|skip)' || true)
	passed=$((passed + ok))
	skipped=$((skipped + skip))
	failed=$((failed + notok))
	[ "$notok" -gt 0 ] && failures+=("$name: $(grep -E '^not ok' "$file" | grep -vE '# (SKIP|skip)' | head -5 | tr '\n' ';')")
}

# A program whose exit status is the only result (must have printed no TAP).
run_one() {
	local name=$1; shift
	local out="$log_dir/$name.log"
	"$@" >"$out" 2>&1
	local rc=$?
	if grep -qE '^(not )?ok [0-9]+' "$out"; then
		cat "$out"
		count_tap "$out" "$name"
		if [ $rc -ne 0 ] && [ "$(grep -E '^not ok' "$out" | grep -cvE '# (SKIP|skip)')" = 0 ]; then
			echo "not ok - $name exited $rc without a failing test (crash?)"
			failed=$((failed + 1)); failures+=("$name: exit $rc")
		fi
	elif [ $rc -eq 0 ]; then
		echo "ok - $name"; passed=$((passed + 1))
	else
		tail -40 "$out"
		echo "not ok - $name (exit $rc, log $out)"
		failed=$((failed + 1)); failures+=("$name: exit $rc")
	fi
}

for suite in "${suites[@]}"; do
	echo "# suite: $suite"
	case "$suite" in
	unit|unit-san)
		dir="$BUILD/tests"; [ "$suite" = unit-san ] && dir="$BUILD/tests-san"
		for bin in "$dir"/test_*; do
			[ -x "$bin" ] || continue
			CMOCKA_MESSAGE_OUTPUT=TAP ASAN_OPTIONS=detect_leaks=1 \
				UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
				run_one "$suite-$(basename "$bin")" "$bin"
		done ;;
	fuzz)
		for bin in "$BUILD"/fuzz/fuzz_*; do
			[ -x "$bin" ] || continue
			name=$(basename "$bin")
			corpus_seed="tests/fuzz/corpus/${name#fuzz_}"
			corpus_work="$BUILD/fuzz-corpus/${name#fuzz_}"
			mkdir -p "$corpus_work"
			[ -d "$corpus_seed" ] && cp -n "$corpus_seed"/* "$corpus_work"/ 2>/dev/null
			run_one "$name" "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=5 -rss_limit_mb=1024 \
				-artifact_prefix="$BUILD/fuzz/$name-" "$corpus_work"
		done ;;
	bpf)
		for bin in "$BUILD"/tests-bpf/test_*; do
			[ -x "$bin" ] || continue
			CMOCKA_MESSAGE_OUTPUT=TAP run_one "bpf-$(basename "$bin")" "$bin"
		done ;;
	cli)
		for script in tests/cli/test_*.sh; do
			[ -f "$script" ] || continue
			run_one "cli-$(basename "$script" .sh)" bash "$script"
		done ;;
	vm)
		# The harness prints "PASS name (Ns)" / "FAIL name: reason" per scenario.
		out="$log_dir/vm.log"
		bash tests/vm/run.sh >"$out" 2>&1
		rc=$?
		n=0
		while IFS= read -r line; do
			case "$line" in
			"PASS "*) n=$((n + 1)); echo "ok $n - vm ${line#PASS }"; passed=$((passed + 1)) ;;
			"FAIL "*) n=$((n + 1)); echo "not ok $n - vm ${line#FAIL }"; failed=$((failed + 1))
				failures+=("vm: ${line#FAIL }") ;;
			esac
		done <"$out"
		if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$out"; then
			tail -40 "$out"
			echo "not ok - vm harness exited $rc (log $out)"
			failed=$((failed + 1)); failures+=("vm: harness exit $rc")
		elif grep -q '^FAIL ' "$out"; then
			grep -v '^PASS ' "$out" | tail -80 | sed 's/^/#   /'
		fi ;;
	*) echo "run-all: unknown suite $suite" >&2; exit 2 ;;
	esac
done

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "# failures:"
	printf '#   %s\n' "${failures[@]}"
fi
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# Run every test suite and print one TAP stream per suite, then one figure per kind of check
# (behaviour, sanitizer reruns, documentation, stand-in self-checks) and "N passed, N failed".
# Usage: tests/run-all.sh [SUITE...]  suites: unit unit-san fuzz bpf cli vm vm-arm64 cluster
# (default: all). cluster: the tests against the real Kubernetes control plane (tests/cluster),
# whose components are built in the background from the start of the vm suite (or of cluster).
# Environment: BUILD (default build), FUZZ_SECONDS (default 20 per target).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit unit-san fuzz bpf cli vm vm-arm64 cluster)

passed=0 failed=0 skipped=0
failures=()
log_dir="$BUILD/test-logs"
mkdir -p "$log_dir"

# Every result also counts in one of four kinds, reported apart at the end so that the
# headline is not inflated: behaviour (the code does what it should), sanitizer (a unit test
# run again under ASan/UBSan: the same checks, a second time), documentation (test_design.sh's
# greps of doc/DESIGN.md) and stand-in (tests/cli/test_kube.sh checking its own API stand-in,
# names "stand-in self-check: ..."). The plain total stays their sum.
kinds=(behaviour sanitizer documentation stand-in)
declare -A kind_passed kind_failed kind_skipped
for k in "${kinds[@]}"; do kind_passed[$k]=0; kind_failed[$k]=0; kind_skipped[$k]=0; done

# kind_of NAME: the kind of a result by its suite/script name.
kind_of() {
	case "$1" in
	unit-san-*) echo sanitizer ;;
	cli-test_design) echo documentation ;;
	*) echo behaviour ;;
	esac
}

# tally KIND pass|fail|skip [N]
tally() {
	local kind=$1 what=$2 n=${3:-1}
	case "$what" in
	pass) passed=$((passed + n)); kind_passed[$kind]=$((kind_passed[$kind] + n)) ;;
	fail) failed=$((failed + n)); kind_failed[$kind]=$((kind_failed[$kind] + n)) ;;
	skip) skipped=$((skipped + n)); kind_skipped[$kind]=$((kind_skipped[$kind] + n)) ;;
	esac
}

# Count a TAP stream: "ok N", "not ok N", "# SKIP" on ok lines counts as skipped.
# cmocka writes a skipped test as "not ok N - name # SKIP": a skip, not a failure.
count_tap() {
	local file=$1 name=$2 kind line what notok=0 suite_kind
	suite_kind=$(kind_of "$name")
	while IFS= read -r line; do
		case "$line" in
		"ok "[0-9]*|"not ok "[0-9]*) ;;
		*) continue ;;
		esac
		kind=$suite_kind
		[[ $line =~ ^(not\ )?ok\ [0-9]+\ -\ stand-in\ self-check: ]] && kind=stand-in
		if [[ $line =~ \#\ (SKIP|skip) ]]; then what=skip
		elif [[ $line == "not ok "* ]]; then what=fail; notok=$((notok + 1))
		else what=pass
		fi
		tally "$kind" "$what"
	done <"$file"
	[ "$notok" -gt 0 ] && failures+=("$name: $(grep -E '^not ok' "$file" | grep -vE '# (SKIP|skip)' | head -5 | tr '\n' ';')")
}

# A program whose exit status is the only result (must have printed no TAP), or a TAP stream.
# A TAP plan "1..0 # skip REASON" with no test lines is a script skipped as a whole: one skip.
run_one() {
	local name=$1; shift
	local out="$log_dir/$name.log" kind
	kind=$(kind_of "$name")
	"$@" >"$out" 2>&1
	local rc=$?
	if grep -qE '^(not )?ok [0-9]+' "$out"; then
		cat "$out"
		count_tap "$out" "$name"
		if [ $rc -ne 0 ] && [ "$(grep -E '^not ok' "$out" | grep -cvE '# (SKIP|skip)')" = 0 ]; then
			echo "not ok - $name exited $rc without a failing test (crash?)"
			tally "$kind" fail; failures+=("$name: exit $rc")
		fi
	elif [ $rc -eq 0 ] && grep -qiE '^1\.\.0([^0-9]|$).*# *skip' "$out"; then
		local reason
		reason=$(grep -iE '^1\.\.0.*# *skip' "$out" | head -1 | sed -E 's/^1\.\.0[^#]*# *[Ss][Kk][Ii][Pp]:? *//')
		echo "ok - $name # SKIP ${reason:-no reason given}"
		tally "$kind" skip
	elif [ $rc -eq 0 ]; then
		echo "ok - $name"; tally "$kind" pass
	else
		tail -40 "$out"
		echo "not ok - $name (exit $rc, log $out)"
		tally "$kind" fail; failures+=("$name: exit $rc")
	fi
}

# vm_suite LOGNAME [ARG...]: tests/vm/run.sh ARG... (options such as --kernel SPEC, then
# filters), which prints "PASS name (Ns)" / "FAIL name: reason" per scenario; ARCH in the
# environment picks the guest. The TAP numbers go on from vm_n (a suite sets it to 0).
# vm_suite --start LOGNAME [ARG...] starts it in the background, vm_suite --collect LOGNAME
# waits for it and counts it; vm_suite --start-cmd LOGNAME CMD... does so for a command whose
# output run_one counts. The guest runs started together share the guest slots
# (EVICTD_VM_SLOTS, tools/vm/run-guest.sh --slots): at most that many guests at once.
vm_n=0
declare -A vm_bg=()
vm_suite() {
	local mode=run
	case $1 in --start|--start-cmd|--collect) mode=${1#--}; shift ;; esac
	local logname=$1 out="$log_dir/$1.log" rc line
	shift
	case $mode in
	start)
		bash tests/vm/run.sh "$@" >"$out" 2>&1 &
		vm_bg[$logname]=$!
		return 0 ;;
	start-cmd)
		{ "$@" >"$log_dir/$logname.out" 2>&1; echo $? >"$log_dir/$logname.rc"; } &
		vm_bg[$logname]=$!
		return 0 ;;
	collect)
		[ -n "${vm_bg[$logname]:-}" ] || { echo "run-all: vm_suite: $logname was not started" >&2; return 1; }
		wait "${vm_bg[$logname]}"
		rc=$?
		unset "vm_bg[$logname]"
		if [ -f "$log_dir/$logname.rc" ]; then
			rc=$(cat "$log_dir/$logname.rc")
			rm -f "$log_dir/$logname.rc"
			# shellcheck disable=SC2016
			run_one "$logname" sh -c 'cat "$1"; exit "$2"' sh "$log_dir/$logname.out" "$rc"
			return 0
		fi ;;
	run)
		bash tests/vm/run.sh "$@" >"$out" 2>&1
		rc=$? ;;
	esac
	while IFS= read -r line; do
		case "$line" in
		"PASS "*) vm_n=$((vm_n + 1)); echo "ok $vm_n - vm ${line#PASS }"; tally behaviour pass ;;
		"FAIL "*) vm_n=$((vm_n + 1)); echo "not ok $vm_n - vm ${line#FAIL }"; tally behaviour fail
			failures+=("vm: ${line#FAIL }") ;;
		esac
	done <"$out"
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$out"; then
		tail -40 "$out"
		echo "not ok - vm harness ($logname) exited $rc (log $out)"
		tally behaviour fail; failures+=("vm: harness exit $rc ($logname)")
	elif grep -q '^FAIL ' "$out"; then
		grep -v '^PASS ' "$out" | tail -80 | sed 's/^/#   /'
	fi
}

# The real Kubernetes components (tests/cluster/build.sh): cold, a build of some minutes that
# needs no test's machine state, so it runs beside the guest suites (a TCG guest keeps one CPU
# busy; the build gets the other, at the lowest priority); warm, seconds.
kubebin_pid=""
kubebin_build() {
	[ -n "$kubebin_pid" ] && return 0
	case " ${suites[*]} " in *" cluster "*) ;; *) return 0 ;; esac
	echo "# building the Kubernetes components in the background ($log_dir/kubebin-build.log)"
	KUBEBIN_JOBS=${KUBEBIN_JOBS:-1} nice -n 19 tests/cluster/build.sh >"$log_dir/kubebin.path" \
		2>"$log_dir/kubebin-build.log" &
	kubebin_pid=$!
}

for suite in "${suites[@]}"; do
	echo "# suite: $suite"
	case "$suite" in vm|vm-arm64|cluster) kubebin_build ;; esac
	case "$suite" in
	unit|unit-san)
		dir="$BUILD/tests"; [ "$suite" = unit-san ] && dir="$BUILD/tests-san"
		for bin in "$dir"/test_*; do
			[ -x "$bin" ] || continue
			CMOCKA_MESSAGE_OUTPUT=TAP ASAN_OPTIONS=detect_leaks=1 \
				UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
				run_one "$suite-$(basename "$bin")" "$bin"
		done
		# The child-process tests again in a session numbered 0, as under a CI runner or an
		# init that never calls setsid() (and in a pid namespace whose session leader is
		# outside): a record with session 0 once killed nothing there. A shell is the
		# namespace's init (it reaps what is orphaned) so the test is not pid 1.
		for bin in "$dir"/test_subprocess*; do
			[ -x "$bin" ] || continue
			name="$suite-session0-$(basename "$bin")"
			if [ "$(id -u)" != 0 ] || ! unshare -p -f --mount-proc true 2>/dev/null; then
				echo "ok - $name # SKIP needs root and unshare(CLONE_NEWPID) with a /proc of its own"
				tally "$(kind_of "$name")" skip
				continue
			fi
			CMOCKA_MESSAGE_OUTPUT=TAP ASAN_OPTIONS=detect_leaks=1 \
				UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
				run_one "$name" unshare -p -f --mount-proc sh -c '"$0" & wait $!' "$bin"
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
		# The whole guest suite on Debian's default kernel (6.1), and on the second kernel
		# (6.12, MGLRU on) the data plane, memory, preemption, refault (MGLRU off and on) and
		# one shutdown scenario: VM_KERNEL2 / VM_KERNEL2_SCENARIOS ("" for VM_KERNEL2 skips it).
		# All at once, and the aarch64 guests of vm-arm64 too when that suite runs, in VM_JOBS
		# guest slots (default: the CPUs, at most 4; 1 = one guest after the other): a TCG
		# guest keeps one or two host threads busy. Scenarios that check timings ('# vm-serial:
		# yes') run with no other guest beside them. Results are counted suite by suite.
		vm_kernel2=${VM_KERNEL2-6.12}
		vm_kernel2_scenarios=${VM_KERNEL2_SCENARIOS:-05-bpf-dataplane 10-memory 14-preempt 18-refault systemd/10-shutdown}
		vm_jobs=${VM_JOBS:-$(nproc 2>/dev/null || echo 1)}
		[ -n "${VM_JOBS:-}" ] || [ "$vm_jobs" -le 4 ] || vm_jobs=4
		export EVICTD_VM_JOBS=$vm_jobs EVICTD_VM_SLOTS=$vm_jobs
		echo "# guests: up to $vm_jobs at once (VM_JOBS)"
		vm_suite --start vm
		if [ -n "$vm_kernel2" ]; then
			# shellcheck disable=SC2086
			vm_suite --start "vm-$vm_kernel2" --kernel "$vm_kernel2" $vm_kernel2_scenarios
		fi
		case " ${suites[*]} " in
		*" vm-arm64 "*)
			if [ -z "${vm_arm64_started:-}" ]; then
				ARCH=arm64 vm_suite --start-cmd bpf-arm64-test_bpf_dataplane bash tests/bpf/run-in-guest.sh
				ARCH=arm64 vm_suite --start vm-arm64 00-smoke 10-memory
				vm_arm64_started=1
			fi ;;
		esac
		vm_n=0
		vm_suite --collect vm
		[ -z "$vm_kernel2" ] || vm_suite --collect "vm-$vm_kernel2" ;;
	vm-arm64)
		# The aarch64 TCG guest on Debian's arm64 kernel (make ARCH=arm64's binaries): the BPF
		# data-plane test (its TAP stream from the guest), the smoke and the memory scenarios.
		# Started by the vm suite (beside its guests) when both run.
		if [ -z "${vm_arm64_started:-}" ]; then
			vm_jobs=${VM_JOBS:-$(nproc 2>/dev/null || echo 1)}
			[ -n "${VM_JOBS:-}" ] || [ "$vm_jobs" -le 4 ] || vm_jobs=4
			export EVICTD_VM_JOBS=$vm_jobs EVICTD_VM_SLOTS=$vm_jobs
			ARCH=arm64 vm_suite --start-cmd bpf-arm64-test_bpf_dataplane bash tests/bpf/run-in-guest.sh
			ARCH=arm64 vm_suite --start vm-arm64 00-smoke 10-memory
			vm_arm64_started=1
		fi
		vm_suite --collect bpf-arm64-test_bpf_dataplane
		vm_n=0
		vm_suite --collect vm-arm64 ;;
	cluster)
		# One control plane for the suite; each test keeps to its own namespace and nodes.
		if ! wait "$kubebin_pid"; then
			tail -30 "$log_dir/kubebin-build.log"
			echo "not ok - the Kubernetes components did not build (log $log_dir/kubebin-build.log)"
			tally behaviour fail; failures+=("cluster: the components did not build")
			continue
		fi
		sed -n 's/^build.sh: built/# the Kubernetes components built/p' "$log_dir/kubebin-build.log"
		cluster_dir="$BUILD/cluster"
		rm -rf "$cluster_dir"
		(
			export KUBEBIN EVICTD=${EVICTD:-$BUILD/evictd} EVICTCTL=${EVICTCTL:-$BUILD/evictctl}
			KUBEBIN=$(cat "$log_dir/kubebin.path")
			. tests/cluster/cluster.sh
			trap cluster_down EXIT
			start=$SECONDS
			if ! cluster_up "$cluster_dir" >"$log_dir/cluster-up.log" 2>&1; then
				cat "$log_dir/cluster-up.log"
				exit 3
			fi
			echo "# control plane: Kubernetes $KUBE_VERSION ($("$KUBEBIN" etcd --version | head -1)) up in $((SECONDS - start))s at $API"
			export CLUSTER_DIR
			for script in tests/cluster/test_*.sh; do
				run_one "cluster-$(basename "$script" .sh)" bash "$script"
			done
			# The real node (test_node.sh, a guest on 6.1 above, every scenario) on the vm
			# suite's second kernel too, scenarios a and b (NODE_SCENARIOS2; make vmtest runs
			# them all), with the kubelet's other cgroup driver, systemd: its own Node name and
			# namespaces on the same control plane.
			node_kernel2=${VM_KERNEL2-6.12}
			[ -z "$node_kernel2" ] ||
				KERNEL_SPEC=$node_kernel2 NODE_SCENARIOS=${NODE_SCENARIOS2-a b} NODE_CGROUP_DRIVER=systemd run_one "cluster-test_node@$node_kernel2" bash tests/cluster/test_node.sh
			# The counts go back to the parent through a file: this is a subshell.
			declare -p passed failed skipped failures kind_passed kind_failed kind_skipped >"$log_dir/cluster.counts"
		)
		case $? in
		0) . "$log_dir/cluster.counts" ;;
		3) echo "not ok - the control plane did not start (log $log_dir/cluster-up.log and $cluster_dir/*.log)"
			tally behaviour fail; failures+=("cluster: the control plane did not start") ;;
		*) echo "not ok - the cluster suite ended early"; tally behaviour fail; failures+=("cluster: ended early") ;;
		esac ;;
	*) echo "run-all: unknown suite $suite" >&2; exit 2 ;;
	esac
done

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "# failures:"
	printf '#   %s\n' "${failures[@]}"
fi
# One figure per kind, then the plain total (CI reads the last line; it is their sum).
summary=""
for k in "${kinds[@]}"; do
	case "$k" in sanitizer) label="sanitizer reruns" ;; stand-in) label="stand-in self-checks" ;; *) label=$k ;; esac
	part="$label: ${kind_passed[$k]} passed, ${kind_failed[$k]} failed"
	[ "${kind_skipped[$k]}" -gt 0 ] && part="$part, ${kind_skipped[$k]} skipped"
	summary="${summary:+$summary; }$part"
done
echo "$summary"
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]

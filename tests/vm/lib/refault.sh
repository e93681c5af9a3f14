#!/bin/sh
# refault.sh: the thrash phase's checks that 18-refault (classic LRU) and 18-refault-mglru
# (MGLRU) share; sourced after vm-lib.sh and kubepods.sh, with evictd started on
# --event-log=/tmp/ev.jsonl and its metrics on 127.0.0.1:9808.

# The clean-cache pod's part is done: delete it (its cache stays, charged to the root now) so
# that the thrash pod is the pod whose memory the decision is about; then the hot file through a
# 96 MiB memcg, over and over (THRASH_PID). Needs PODS, DATA, MiB.
start_thrash() {
    kp_delete cache || vm_info "kp_delete cache failed"
    kp_podlist $PODS
    echo $((96 * MiB)) >"$(kp_path thrash)/memory.max"
    kp_run thrash sh -c "while :; do cat $DATA/hot >/dev/null; done"
    THRASH_PID=$KP_PID
    sleep 3
}

# The daemon says the file cache refaults (marker thrash-refaulting), within 30 s.
expect_refaulting() {
    if vm_wait_for 30 sh -c "wget -q -O - http://127.0.0.1:9808/metrics | grep -q '^evictd_file_cache_refaulting 1'"; then
        vm_pass thrash-refaulting
    else
        vm_fail thrash-refaulting "$(wget -q -O - http://127.0.0.1:9808/metrics | grep -E 'refault|memory_available' | tr '\n' ' ')"
    fi
}

# The decision: memory.available, the thrash pod as the victim, killed (not only decided), and
# its cgroup empty (marker thrash-refault-aware-evicts).
killed_thrash() {
    tr -d ' ' </tmp/ev.jsonl | grep '"signal":"memory.available"' | grep '"action":"killed"' |
        grep -q '"victim":{[^}]*"pod":"thrash"'
}
expect_thrash_killed() {
    if vm_wait_for 30 killed_thrash &&
        vm_wait_for 30 grep -q '^populated 0' "$(kp_path thrash)/cgroup.events"; then
        vm_info "decision: $(tr -d ' ' </tmp/ev.jsonl | grep '"signal":"memory.available"' | head -1 | grep -oE '"(action|value|threshold)":[^,]*|"pod":"[^"]*"' | tr '\n' ' ')"
        vm_pass thrash-refault-aware-evicts
    else
        vm_fail thrash-refault-aware-evicts "no kill of the thrash pod for memory.available in the log: $(tail -c 600 /tmp/ev.jsonl); $(cat "$(kp_path thrash)/cgroup.events" | tr '\n' ' ')"
    fi
}

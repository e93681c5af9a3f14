# kubepods.sh - build a kubelet-like kubepods cgroup v2 tree in a busybox VM guest and
# the PodList JSON that goes with it (for evictd --pods-file).
#
#   . /usr/lib/evictd-vm/kubepods.sh          (scenarios: # vm-add: tests/vm/lib/kubepods.sh:/usr/lib/evictd-vm/kubepods.sh)
#
#   kp_init systemd|cgroupfs [NODE]   create kubepods(.slice) with its Burstable and BestEffort
#                                     children, memory+pids(+cpu) enabled on every level
#   kp_pod NAME QOS [opts]            create a pod cgroup and its container cgroup; QOS is
#                                     Guaranteed, Burstable or BestEffort; opts:
#        --priority N                 spec.priority (default 0)
#        --request MEM                memory request (Kubernetes quantity, e.g. 128Mi)
#        --limit MEM                  memory limit (Guaranteed: default = request)
#        --grace S                    terminationGracePeriodSeconds (default: not set)
#        --ephemeral MEM              ephemeral-storage request
#      The pod gets a fresh UID on every kp_pod (like a re-created pod).  Guaranteed pods get
#      memory.max = request on the pod cgroup (and the container), like the kubelet;
#      Burstable pods get memory.max = limit when one is given.
#   kp_run NAME CMD [ARG...]          start CMD in the pod's container cgroup in the background;
#                                     KP_PID is its pid (the process is in the cgroup before exec)
#   kp_podlist FILE                   write the PodList of every live pod (atomic rename)
#   kp_path NAME / kp_uid NAME        the pod cgroup directory / its UID
#   kp_populated NAME                 true if the pod cgroup still has processes
#   kp_procs NAME                     number of processes (pids.current) in the pod
#   kp_delete NAME                    cgroup.kill what is left, remove the cgroups, forget the pod
#   kp_pods                           the names of the pods that exist
#   kp_oom_kills                      "TOTAL detail": /proc/vmstat oom_kill plus oom_kill of every
#                                     memory.events below /sys/fs/cgroup (0 when no OOM kill)
#   kp_qty_bytes QTY                  a Kubernetes quantity (Ki Mi Gi k M G, or bytes) in bytes
KP_CG=${KP_CG:-/sys/fs/cgroup}
KP_STATE=${KP_STATE:-/run/kubepods}
KP_NODE=evictd-vm
KP_DRIVER=""

kp_qty_bytes() {
    case $1 in
        *Ki) echo $(( ${1%Ki} * 1024 )) ;;
        *Mi) echo $(( ${1%Mi} * 1048576 )) ;;
        *Gi) echo $(( ${1%Gi} * 1073741824 )) ;;
        *k) echo $(( ${1%k} * 1000 )) ;;
        *M) echo $(( ${1%M} * 1000000 )) ;;
        *G) echo $(( ${1%G} * 1000000000 )) ;;
        *) echo $(( $1 )) ;;
    esac
}

_kp_enable() { # _kp_enable DIR: turn on the controllers the parent has for DIR's children
    for _kp_c in memory pids cpu; do
        case " $(cat "$1/cgroup.controllers") " in
            *" $_kp_c "*) echo "+$_kp_c" >"$1/cgroup.subtree_control" || return 1 ;;
        esac
    done
}

kp_init() {
    KP_DRIVER=$1
    KP_NODE=${2:-evictd-vm}
    mkdir -p "$KP_STATE" || return 1
    echo "$KP_DRIVER" >"$KP_STATE/driver"
    echo "$KP_NODE" >"$KP_STATE/node"
    [ -f "$KP_STATE/seq" ] || echo 0 >"$KP_STATE/seq"
    case $KP_DRIVER in
        systemd)
            KP_TOP=$KP_CG/kubepods.slice
            KP_QOS_Guaranteed=$KP_TOP
            KP_QOS_Burstable=$KP_TOP/kubepods-burstable.slice
            KP_QOS_BestEffort=$KP_TOP/kubepods-besteffort.slice ;;
        cgroupfs)
            KP_TOP=$KP_CG/kubepods
            KP_QOS_Guaranteed=$KP_TOP
            KP_QOS_Burstable=$KP_TOP/burstable
            KP_QOS_BestEffort=$KP_TOP/besteffort ;;
        *) echo "kp_init: driver must be systemd or cgroupfs, not '$KP_DRIVER'" >&2; return 1 ;;
    esac
    mkdir -p "$KP_TOP" && _kp_enable "$KP_TOP" || return 1
    mkdir -p "$KP_QOS_Burstable" "$KP_QOS_BestEffort" || return 1
    _kp_enable "$KP_QOS_Burstable" && _kp_enable "$KP_QOS_BestEffort"
}

_kp_get() { cat "$KP_STATE/pod.$1.$2" 2>/dev/null; }
kp_path() { _kp_get "$1" path; }
kp_uid() { _kp_get "$1" uid; }

kp_pod() {
    _kp_n=$1 _kp_q=$2
    shift 2
    _kp_prio=0 _kp_req="" _kp_lim="" _kp_grace="" _kp_eph=""
    while [ $# -gt 0 ]; do
        case $1 in
            --priority) _kp_prio=$2 ;;
            --request) _kp_req=$2 ;;
            --limit) _kp_lim=$2 ;;
            --grace) _kp_grace=$2 ;;
            --ephemeral) _kp_eph=$2 ;;
            *) echo "kp_pod: unknown option '$1'" >&2; return 1 ;;
        esac
        shift 2
    done
    [ -n "$KP_DRIVER" ] || { echo "kp_pod: call kp_init first" >&2; return 1; }
    [ -e "$KP_STATE/pod.$_kp_n.uid" ] && { echo "kp_pod: pod $_kp_n exists" >&2; return 1; }
    _kp_seq=$(( $(cat "$KP_STATE/seq") + 1 ))
    echo $_kp_seq >"$KP_STATE/seq"
    # a valid, unique, recognisable UID (8-4-4-4-12 hex); the kubelet's cgroup uses it
    _kp_uid=$(printf 'e71c7d00-%04x-4000-8000-%012x' $(( _kp_seq % 65536 )) $(( $(date +%s) * 1000 + _kp_seq )))
    _kp_uidu=$(echo "$_kp_uid" | tr - _)
    _kp_cid=$(printf '%064x' $_kp_seq)
    case $_kp_q in
        Guaranteed) [ -n "$_kp_lim" ] || _kp_lim=$_kp_req; _kp_qdir=$KP_QOS_Guaranteed ;;
        Burstable) _kp_qdir=$KP_QOS_Burstable ;;
        BestEffort) _kp_req="" _kp_lim="" _kp_qdir=$KP_QOS_BestEffort ;;
        *) echo "kp_pod: QoS must be Guaranteed, Burstable or BestEffort, not '$_kp_q'" >&2; return 1 ;;
    esac
    case $KP_DRIVER:$_kp_q in
        systemd:Guaranteed) _kp_pdir=$_kp_qdir/kubepods-pod$_kp_uidu.slice ;;
        systemd:Burstable) _kp_pdir=$_kp_qdir/kubepods-burstable-pod$_kp_uidu.slice ;;
        systemd:BestEffort) _kp_pdir=$_kp_qdir/kubepods-besteffort-pod$_kp_uidu.slice ;;
        cgroupfs:*) _kp_pdir=$_kp_qdir/pod$_kp_uid ;;
    esac
    case $KP_DRIVER in
        systemd) _kp_cdir=$_kp_pdir/cri-containerd-$_kp_cid.scope ;;
        cgroupfs) _kp_cdir=$_kp_pdir/$_kp_cid ;;
    esac
    mkdir "$_kp_pdir" && _kp_enable "$_kp_pdir" && mkdir "$_kp_cdir" || return 1
    if [ -n "$_kp_lim" ]; then
        kp_qty_bytes "$_kp_lim" >"$_kp_pdir/memory.max" && kp_qty_bytes "$_kp_lim" >"$_kp_cdir/memory.max" || return 1
    fi
    echo 0 >"$_kp_pdir/memory.swap.max" 2>/dev/null
    echo "$_kp_uid" >"$KP_STATE/pod.$_kp_n.uid"
    echo "$_kp_q" >"$KP_STATE/pod.$_kp_n.qos"
    echo "$_kp_pdir" >"$KP_STATE/pod.$_kp_n.path"
    echo "$_kp_cdir" >"$KP_STATE/pod.$_kp_n.cpath"
    # the Pod object, as kubectl get pods -o json has it (the fields evictd reads)
    _kp_res=""
    if [ -n "$_kp_req$_kp_lim$_kp_eph" ]; then
        _kp_r="" _kp_l=""
        [ -n "$_kp_req" ] && _kp_r="\"memory\": \"$_kp_req\""
        [ -n "$_kp_eph" ] && _kp_r="${_kp_r:+$_kp_r, }\"ephemeral-storage\": \"$_kp_eph\""
        [ -n "$_kp_lim" ] && _kp_l="\"memory\": \"$_kp_lim\""
        if [ "$_kp_q" = Guaranteed ]; then
            _kp_r="$_kp_r, \"cpu\": \"100m\"" _kp_l="$_kp_l, \"cpu\": \"100m\""
        fi
        _kp_res="\"requests\": {$_kp_r}"
        [ -z "$_kp_l" ] || _kp_res="$_kp_res, \"limits\": {$_kp_l}"
    fi
    {
        printf '    {\n      "apiVersion": "v1", "kind": "Pod",\n'
        printf '      "metadata": {"name": "%s", "namespace": "vmtest", "uid": "%s"},\n' "$_kp_n" "$_kp_uid"
        printf '      "spec": {"nodeName": "%s", "priority": %s,%s\n' "$KP_NODE" "$_kp_prio" \
            "${_kp_grace:+ \"terminationGracePeriodSeconds\": $_kp_grace,}"
        printf '        "containers": [{"name": "main", "image": "busybox", "resources": {%s}}]},\n' "$_kp_res"
        printf '      "status": {"phase": "Running", "qosClass": "%s"}\n    }' "$_kp_q"
    } >"$KP_STATE/pod.$_kp_n.json"
    echo "$_kp_n" >>"$KP_STATE/names"
}

kp_pods() {
    [ -f "$KP_STATE/names" ] || return 0
    while read -r _kp_p; do [ -e "$KP_STATE/pod.$_kp_p.uid" ] && echo "$_kp_p"; done <"$KP_STATE/names"
}

kp_podlist() {
    _kp_f=$1 _kp_first=1
    {
        printf '{\n  "apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"},\n  "items": [\n'
        for _kp_p in $(kp_pods); do
            [ $_kp_first = 1 ] || printf ',\n'
            cat "$KP_STATE/pod.$_kp_p.json"
            _kp_first=0
        done
        printf '\n  ]\n}\n'
    } >"$_kp_f.tmp.$$" && mv "$_kp_f.tmp.$$" "$_kp_f"
}

kp_run() {
    _kp_n=$1
    shift
    _kp_cdir=$(_kp_get "$_kp_n" cpath)
    [ -n "$_kp_cdir" ] || { echo "kp_run: no pod $_kp_n" >&2; return 1; }
    # the subshell enters the container cgroup, then becomes CMD
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$_kp_cdir" "$@" &
    KP_PID=$!
    # wait (a little) until it is really in there
    _kp_i=0
    while [ $_kp_i -lt 100 ] && ! grep -qx "$KP_PID" "$_kp_cdir/cgroup.procs" 2>/dev/null; do
        sleep 0.02
        _kp_i=$((_kp_i + 1))
    done
}

kp_populated() {
    _kp_p=$(kp_path "$1")
    [ -n "$_kp_p" ] && grep -q '^populated 1' "$_kp_p/cgroup.events" 2>/dev/null
}

kp_procs() {
    _kp_p=$(kp_path "$1")
    cat "$_kp_p/pids.current" 2>/dev/null || echo 0
}

kp_delete() {
    _kp_p=$(kp_path "$1")
    _kp_c=$(_kp_get "$1" cpath)
    if [ -n "$_kp_p" ] && [ -d "$_kp_p" ]; then
        echo 1 >"$_kp_p/cgroup.kill" 2>/dev/null
        _kp_i=0
        while [ $_kp_i -lt 250 ] && grep -q '^populated 1' "$_kp_p/cgroup.events" 2>/dev/null; do
            sleep 0.02
            _kp_i=$((_kp_i + 1))
        done
        rmdir "$_kp_c" 2>/dev/null
        rmdir "$_kp_p" || return 1
    fi
    rm -f "$KP_STATE/pod.$1".*
}

kp_oom_kills() {
    _kp_t=$(awk '$1 == "oom_kill" { print $2 }' /proc/vmstat)
    _kp_d="vmstat=$_kp_t"
    for _kp_e in $(find "$KP_CG" -name memory.events); do
        _kp_k=$(awk '$1 == "oom_kill" { print $2 }' "$_kp_e")
        if [ "${_kp_k:-0}" != 0 ]; then
            _kp_d="$_kp_d ${_kp_e#"$KP_CG"/}=$_kp_k"
            _kp_t=$((_kp_t + _kp_k))
        fi
    done
    echo "$_kp_t $_kp_d"
}

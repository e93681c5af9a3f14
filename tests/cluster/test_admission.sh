#!/usr/bin/env bash
# evictd's ValidatingAdmissionPolicy (tools/deploy/admission-policy.yaml) judged by the real
# kube-apiserver, not by a CEL implementation of our own (tests/admission/run.mjs): deployed as
# users deploy it (kubectl apply -k tools/deploy), then
#   - each request evictd sends (tests/admission/requests: the node taint merge patches with
#     their resourceVersion precondition, the pods/status strategic merge patches with their uid)
#     against a stored object made as the fixture says (a Node with its labels, annotations,
#     podCIDR, providerID and taints; a pod bound to it in phase Running), sent with curl as
#     evictd's ServiceAccount with a token bound to that Node: 200;
#   - every forbidden variant of run.mjs (tests/admission/variants.mjs, listed for this test by
#     tests/cluster/admission-cases.mjs), sent for real the same way: 403 from the policy, its
#     message the policy's and the part run.mjs expects; or refused before admission, and then
#     said so: by RBAC (403: the ClusterRole grants no such verb; sent again with it granted to
#     show the policy refuses them too) or by the API server's validation (422);
#   - cases admission-cases.mjs adds: where validation stops run.mjs's variant, one it lets
#     through (providerID and podCIDR on a Node without them, a pod IP replaced), and a legacy
#     Secret token, which has no user extra at all;
#   - what evictd's account may do (kubectl auth can-i --list) beside what the kubelet's
#     identity may, and the Node authorizer's field-selector rule for the kubelet's pod list;
#   - where the real server's verdict or message differs from run.mjs's evaluation (printed),
#     and that every request the policy judged got run.mjs's verdict and first message.
# Nothing here depends on evictd's account reading pods. Run alone it starts its own control
# plane: EVICTD=build/evictd bash tests/cluster/test_admission.sh (about a minute).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh
. tests/cluster/lib.sh

if ! command -v node >/dev/null; then
	echo "1..0 # SKIP node is not installed (the cases come from tests/admission/variants.mjs)"
	exit 0
fi

POLICY=evictd-node-scoped-writes
A=adm-a B=adm-b C=adm-c NS=adm
WIDE=evictd-test-admission-widened LEGACY=evictd-test-admission-legacy

cluster_begin
cleanup() {
	kc delete clusterrolebinding "$WIDE" --ignore-not-found >/dev/null 2>&1
	kc delete clusterrole "$WIDE" --ignore-not-found >/dev/null 2>&1
	kc -n evictd-system delete secret "$LEGACY" --ignore-not-found >/dev/null 2>&1
	kc delete namespace "$NS" --wait=false >/dev/null 2>&1
	cluster_end
}
trap cleanup EXIT

as_admin() { curl -s --cacert "$CA" --cert "$CLUSTER_DIR/pki/admin.crt" --key "$CLUSTER_DIR/pki/admin.key" "$@"; }
# send TOKEN METHOD PATH CONTENT-TYPE BODY-FILE: the request as evictd's account; the response
# body in $tmp/resp, the status code on stdout.
send() {
	local args=(-s -o "$tmp/resp" -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $1" -X "$2")
	[ -n "$4" ] && args+=(-H "Content-Type: $4")
	[ -n "$5" ] && args+=(--data-binary "@$5")
	curl "${args[@]}" "$API$3"
}
as_evictd() { "$KUBEBIN" kubectl --kubeconfig /dev/null --server "$API" --certificate-authority "$CA" --token "$1" "${@:2}"; }

check "kubectl apply -k tools/deploy on the real apiserver" deploy_evictd
deployed=$SECONDS
for n in "$A" "$B" "$C"; do check "Node $n registered by its own identity" make_node "$n"; done
check "a namespace with its default ServiceAccount" make_namespace "$NS"
# The node lifecycle controller marks a node whose kubelet is silent for 50 s NotReady and
# taints it: each node's Lease is renewed meanwhile (not its status: that would change the
# resourceVersion the taint patches carry).
for n in "$A" "$B" "$C"; do node_heartbeat "$n" lease-only; done
# The TaintNodesByCondition admission plugin gives a new Node node.kubernetes.io/not-ready; the
# controller takes it away once the node is Ready. Settled before any resourceVersion is read.
no_not_ready() { ! kc get node "$1" -o jsonpath='{.spec.taints[*].key}' | grep -q not-ready; }
for n in "$A" "$B" "$C"; do check "$n: the not-ready taint gone (Ready)" wait_for 30 no_not_ready "$n"; done

for n in "$A" "$B" "$C"; do evictd_token "$n" >"$tmp/token-$n"; done
# No --bound-object-kind: a token of the account that names no node.
kc -n evictd-system create token evictd --duration 1h >"$tmp/token-none"
# A legacy long-lived token: a kubernetes.io/service-account-token Secret, which the token
# controller fills in; it authenticates with no user extra at all.
kc apply -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
 "metadata": {"name": "$LEGACY", "namespace": "evictd-system", "annotations": {"kubernetes.io/service-account.name": "evictd"}}}
EOF
legacy_token() { kc -n evictd-system get secret "$LEGACY" -o jsonpath='{.data.token}' | base64 -d >"$tmp/token-legacy" && test -s "$tmp/token-legacy"; }
wait_for 20 legacy_token
check "tokens of evictd's ServiceAccount: bound to $A, $B and $C, one bound to nothing, a legacy Secret's" \
	test -s "$tmp/token-$A" -a -s "$tmp/token-$B" -a -s "$tmp/token-$C" -a -s "$tmp/token-none" -a -s "$tmp/token-legacy"
token() { cat "$tmp/token-${1:-none}"; }

# ---- the policy in effect --------------------------------------------------------------------
# The apiserver loads policies and bindings from informers, asynchronously: a label on its own
# Node (dry run: nothing written even before the policy holds) is refused once both are in.
printf '{"metadata":{"labels":{"evictd-test/probe":"x"}}}' >"$tmp/probe.json"
policy_refuses() {
	[ "$(send "$(token "$A")" PATCH "/api/v1/nodes/$A?dryRun=All" application/merge-patch+json "$tmp/probe.json")" = 403 ] &&
		grep -q "ValidatingAdmissionPolicy '$POLICY'" "$tmp/resp"
}
check "the policy and its binding in effect: a label on its own Node refused (dry run)" wait_for 30 policy_refuses
echo "# in effect $((SECONDS - deployed)) s after the apply (nodes and tokens made meanwhile); the probe's answer: $(jq -r .message "$tmp/resp")"

# ---- the stored objects and the cases ----------------------------------------------------------
node tests/cluster/admission-cases.mjs "$A" "$B" "$C" "$NS" >"$tmp/cases.jsonl" 2>"$tmp/cases.err"
check "the cases: evictd's requests and run.mjs's forbidden variants" test -s "$tmp/cases.jsonl"
have_js=$(jq -s 'all(.js != null)' "$tmp/cases.jsonl")
[ "$have_js" = true ] || echo "# no CEL evaluation to compare with: $(cat "$tmp/cases.err")"

# Variants the real server refuses before the policy sees them: evictd's ClusterRole
# (tools/deploy/rbac.yaml) grants no such verb, and RBAC answers first (403, its own message).
# run.mjs's point for them is that the policy refuses them as well, should RBAC ever grant
# them; the second pass below grants them (a ClusterRole of this test's) and checks that.
declare -A by_rbac=(
	["Node status (nodes/status)"]=1 ["a Node deleted"]=1 ["a Node created"]=1
	["a pod DELETE with a uid precondition"]=1 ["a pod on another node deleted"]=1
	["an unscheduled pod deleted"]=1 ["a pod spec patch (pods UPDATE)"]=1
	["an eviction (pods/eviction CREATE)"]=1 ["a pod created"]=1
)
# Variants the API server's validation refuses (422) before admission: the strategy's
# ValidateUpdate runs in rest.BeforeUpdate, before the registry calls the validating admission
# (k8s.io/apiserver pkg/registry/generic/registry/store.go Update). Key: the variant; value:
# the part of the validation's message.
#   spec.providerID: the fixture's Node has one, and ValidateNodeUpdate lets it change only
#     from "" (admission-cases.mjs adds the case of a Node without one: the policy refuses it);
#   a pod IP: a strategic merge puts the new address in front of podIPs (two IPv4 addresses,
#     invalid) where run.mjs's merge appends it (admission-cases.mjs adds a replacement of the
#     address the validation lets through: the policy refuses it).
declare -A by_validation=(
	["spec.providerID"]="node updates may not change providerID except from \"\" to valid"
	["a pod IP"]="status.podIPs: Invalid value: [{\"IP\":\"10.244.9.9\"},{\"IP\":\"10.244.1.17\"}]: may specify no more than one IP for each IP family"
)

# The stored object, made by the admin before each request, as the case's "stored" says:
#   a Node: a JSON patch that sets its labels, annotations, taints and unschedulable, and its
#     podCIDR and providerID when it has them (neither can change once set). Its labels also
#     have beta.kubernetes.io/os as kubernetes.io/os says: the node lifecycle controller puts
#     it back on a Node without it (reconcileNodeLabels), which would change the
#     resourceVersion under the request;
#   a pod: a new one, bound to its node or unscheduled (a scheduler that does not exist); no
#     owner (the garbage collector would delete it for a missing one), tolerating every taint
#     (the taint eviction controller would delete it for the out-of-service one); then its
#     status, a merge patch of pods/status.
# The jq filter prints the case's fields as shell assignments, the bodies those requests send
# among them.
fields='@sh "kind=\(.kind) name=\(.name) method=\(.method) path=\(.path) ctype=\(.contentType)
	claim=\(.claim) expect=\(.expect // "") first=\(.js.denials[0].message // "")
	skind=\(.stored.kind) sname=\(.stored.metadata.name) sns=\(.stored.metadata.namespace // "")
	has_body=\(.body != null and .method != "DELETE" or .body.kind == "DeleteOptions")",
	(.stored as $s | if $s.kind == "Node" then
		@sh "node_patch=\([
			{op: "add", path: "/metadata/labels", value: ($s.metadata.labels // {} |
				if .["kubernetes.io/os"] then .["beta.kubernetes.io/os"] = .["kubernetes.io/os"] else . end)},
			{op: "add", path: "/metadata/annotations", value: ($s.metadata.annotations // {})},
			{op: "add", path: "/spec/taints", value: $s.spec.taints},
			{op: "add", path: "/spec/unschedulable", value: ($s.spec.unschedulable // false)}] +
			(if $s.spec.providerID then [{op: "add", path: "/spec/providerID", value: $s.spec.providerID}] else [] end) +
			(if $s.spec.podCIDR then [{op: "add", path: "/spec/podCIDR", value: $s.spec.podCIDR},
				{op: "add", path: "/spec/podCIDRs", value: $s.spec.podCIDRs}] else [] end) | tojson)"
	else
		@sh "pod_create=\({apiVersion: "v1", kind: "Pod", metadata: ($s.metadata | {name, namespace, labels, annotations}),
			spec: ($s.spec + {tolerations: [{operator: "Exists"}]} +
				(if $s.spec.nodeName then {} else {schedulerName: "evictd-test-none"} end))} | tojson)
		pod_status=\({status: $s.status} | tojson)"
	end)'

# stored: makes the case's stored object; prints its resourceVersion (a Node) or uid (a pod).
stored() {
	local code
	if [ "$skind" = Node ]; then
		code=$(as_admin -o "$tmp/stored.json" -w '%{http_code}' -X PATCH -H 'Content-Type: application/json-patch+json' \
			--data-binary "$node_patch" "$API/api/v1/nodes/$sname")
		[ "$code" = 200 ] && { jq -r .metadata.resourceVersion "$tmp/stored.json"; return; }
	else
		code=$(as_admin -o "$tmp/stored.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
			--data-binary "$pod_create" "$API/api/v1/namespaces/$sns/pods")
		[ "$code" = 201 ] && code=$(as_admin -o "$tmp/stored.json" -w '%{http_code}' -X PATCH \
			-H 'Content-Type: application/merge-patch+json' --data-binary "$pod_status" \
			"$API/api/v1/namespaces/$sns/pods/$sname/status")
		[ "$code" = 200 ] && { jq -r .metadata.uid "$tmp/stored.json"; return; }
	fi
	echo "the stored $skind $sname: $code $(jq -r .message "$tmp/stored.json" 2>/dev/null)" >&2
}

rbac_verb() { case "$1" in DELETE) echo delete ;; POST) echo create ;; PATCH) echo patch ;; PUT) echo update ;; esac; }
rbac_resource() { # PATH: the resource RBAC names, with its subresource
	local p=${1#/api/v1/} r
	p=${p#namespaces/*/}
	IFS=/ read -r r _ sub <<<"$p"
	echo "$r${sub:+/$sub}"
}

# run_case LINE [PASS]: makes the stored object, sends the request as evictd, records the answer
# in $tmp/results.jsonl and checks it. PASS: "" (the deployed RBAC) or "widened".
run_case() {
	local c=$1 pass=${2:-} kind name method path ctype claim expect first skind sname sns has_body
	local node_patch pod_create pod_status val body="" code msg want label
	eval "$(jq -r "$fields" <<<"$c")"
	label="$name ($method $path${pass:+, RBAC widened})"
	val=$(stored)
	if [ -z "$val" ]; then fail "$label: the stored object could not be made"; return; fi
	# The body as sent, with the stored object's resourceVersion or uid for the fixture's.
	if [ "$has_body" = true ]; then
		body=$tmp/body.json
		jq --arg k "$([ "$skind" = Node ] && echo resourceVersion || echo uid)" --arg v "$val" '.body |
			if .metadata[$k] then .metadata[$k] = $v else . end |
			if .preconditions.uid then .preconditions.uid = $v else . end' <<<"$c" >"$body"
	fi
	# A variant that turns a PATCH into a POST keeps the fixture's patch content type.
	[ "$method" = POST ] && ctype=application/json
	code=$(send "$(token "$claim")" "$method" "$path" "$([ -n "$body" ] && echo "$ctype")" "$body")
	msg=$(jq -r '.message // ""' "$tmp/resp" 2>/dev/null)
	jq -nc --argjson c "$c" --arg code "$code" --arg msg "$msg" --arg pass "$pass" \
		'$c | {i, kind, name, expect, js, code: ($code | tonumber), message: $msg, pass: $pass}' >>"$tmp/results.jsonl"
	local detail="answer $code: $msg"
	if [ "$kind" = allowed ]; then
		if [ "$code" = 200 ]; then pass "admitted: $label"; else fail "admitted: $label" "$detail"; fi
		return
	fi
	if [ -z "$pass" ] && [ -n "${by_rbac[$name]:-}" ]; then
		want="cannot $(rbac_verb "$method") resource \"$(rbac_resource "$path")\""
		if [ "$code" = 403 ] && [[ "$msg" == *"$want"* ]] && [[ "$msg" != *ValidatingAdmissionPolicy* ]]; then
			pass "refused by RBAC before admission (403, $want): $label"
		else
			fail "refused by RBAC before admission (403, $want): $label" "$detail"
		fi
		return
	fi
	if [ -n "${by_validation[$name]:-}" ]; then
		want=${by_validation[$name]}
		if [ "$code" = 422 ] && [[ "$msg" == *"$want"* ]]; then
			pass "refused by the API server's validation before admission (422, $want): $label"
		else
			fail "refused by the API server's validation before admission (422): $label" "$detail"
		fi
		return
	fi
	# run.mjs's evaluation fails on an expression (failurePolicy Fail: a denial); the real server
	# says so in its own words, and with no reason on the decision, 422 (Invalid).
	if [[ "$first" == "expression error"* ]]; then
		if [ "$code" = 422 ] && [[ "$msg" == *"ValidatingAdmissionPolicy '$POLICY' with binding '$POLICY' denied request: "*"resulted in error"* ]]; then
			pass "refused by the policy, failing closed on an expression error (422): $label"
		else
			fail "refused by the policy, failing closed on an expression error (422): $label" "$detail"
		fi
		return
	fi
	# The real server names the first validation that fails (its dispatcher reports
	# deniedDecisions[0]); run.mjs accepts any. Where its expected part is a later
	# validation's, the message checked is the first one's, as run.mjs's CEL evaluation finds it.
	want=$expect
	[ -n "$first" ] && [[ "$first" != *"$expect"* ]] && want=$first
	if [ "$code" = 403 ] && [[ "$msg" == *"ValidatingAdmissionPolicy '$POLICY' with binding '$POLICY' denied request: "* ]] &&
		[[ "$msg" == *"$want"* ]]; then
		pass "refused by the policy (403, \"$want\"): $label"
	else
		fail "refused by the policy (403, \"$want\"): $label" "$detail"
	fi
}

while IFS= read -r c; do run_case "$c"; done <"$tmp/cases.jsonl"

# ---- what each identity may do ----------------------------------------------------------------
echo "# kubectl auth can-i --list as evictd's ServiceAccount (token bound to $A):"
as_evictd "$(token "$A")" auth can-i --list 2>&1 | sed 's/^/#   /'
echo "# kubectl auth can-i --list as the kubelet's identity system:node:$A:"
kn "$A" auth can-i --list 2>&1 | sed 's/^/#   /'
# kubectl prints yes or no (and warnings on stderr); an error prints neither.
can() { [ "$(as_evictd "$(token "$A")" auth can-i "$@" 2>/dev/null)" = yes ]; }
cannot() { [ "$(as_evictd "$(token "$A")" auth can-i "$@" 2>/dev/null)" = no ]; }
check "evictd's account can patch nodes and pods/status (the writes it sends)" \
	eval 'can patch nodes && can patch pods --subresource=status -n "$NS"'
check "evictd's account cannot create pods" cannot create pods -n "$NS"
check "evictd's account cannot delete pods" cannot delete pods -n "$NS"
check "evictd's account cannot patch nodes/status" cannot patch nodes --subresource=status
check "evictd's account cannot create pods/eviction" cannot create pods --subresource=eviction -n "$NS"
kubelet_lists() { kn "$A" get pods -A --field-selector "spec.nodeName=$A" -o name >"$tmp/kubelet-pods" && grep -q '^pod/' "$tmp/kubelet-pods"; }
check "the kubelet's identity lists its node's pods with the field selector spec.nodeName=$A" kubelet_lists
kn "$A" get pods -A >/dev/null 2>"$tmp/kubelet-all.err"
echo "# kn $A get pods -A: $(cat "$tmp/kubelet-all.err")"
check "without it the Node authorizer refuses (403, KEP-4601: list/watch pods only with spec.nodeName)" \
	grep -q 'Forbidden.*can only list/watch pods with spec.nodeName field selector' "$tmp/kubelet-all.err"
check "nor with another node's selector" \
	eval "! kn '$A' get pods -A --field-selector spec.nodeName=$B >/dev/null 2>&1"

# ---- the RBAC-refused variants with RBAC granting them: the policy refuses them too ---------
kc apply -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "$WIDE"},
  "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["create", "delete"]},
            {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "patch"]},
            {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]},
 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "$WIDE"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "$WIDE"},
  "subjects": [{"kind": "ServiceAccount", "name": "evictd", "namespace": "evictd-system"}]}]}
EOF
check "RBAC widened for evictd's account (a ClusterRole of this test's)" \
	wait_for 20 eval 'can delete pods -n "$NS" && can create pods --subresource=eviction -n "$NS"'
# The same variants, on pods of their own (wide-I).
node tests/cluster/admission-cases.mjs "$A" "$B" "$C" "$NS" wide 2>/dev/null |
	jq -c --argjson names "$(printf '%s\n' "${!by_rbac[@]}" | jq -R . | jq -s .)" 'select(.name | IN($names[]))' \
	>"$tmp/cases-wide.jsonl"
while IFS= read -r c; do run_case "$c" widened; done <"$tmp/cases-wide.jsonl"
kc delete clusterrolebinding "$WIDE" >/dev/null; kc delete clusterrole "$WIDE" >/dev/null
check "RBAC as deployed again" wait_for 20 cannot delete pods -n "$NS"

# ---- the real server beside run.mjs's CEL evaluation ------------------------------------------
# For each case that reached the policy: the same verdict, and the real message is
# "ValidatingAdmissionPolicy ... denied request: " + the evaluation's first denial. The rest
# is printed: refused before admission (RBAC, validation), and where run.mjs's expected part is
# not the message the real server gives.
if [ "$have_js" = true ]; then
	jq -r --arg p "ValidatingAdmissionPolicy '$POLICY' with binding '$POLICY' denied request: " '
		(.message | split($p) | .[1] // "") as $denial |
		(if .code == 200 then "admitted" elif .code == 403 and $denial != "" then "policy"
		 elif .code == 422 and ($denial | contains("resulted in error")) then "policy error"
		 elif .code == 403 then "RBAC" elif .code == 422 then "validation" else "other" end) as $real |
		(if .js.allowed then "admitted" elif (.js.denials[0].message | startswith("expression error")) then "policy error"
		 else "policy" end) as $js |
		if $real != $js then
			"differs: \(.name)\(if .pass != "" then " (RBAC widened)" else "" end): real \(.code) (\($real)): \(.message) | run.mjs: \($js)\(if $js == "policy" then ": " + .js.denials[0].message else "" end)"
		elif $real == "policy" and $denial != .js.denials[0].message then
			"differs: \(.name): message: real \"\($denial)\" | run.mjs \"\(.js.denials[0].message)\""
		elif $real == "policy" and (.expect as $e | $denial | contains($e) | not) then
			"differs: \(.name)\(if .pass != "" then " (RBAC widened)" else "" end): run.mjs expects \"\(.expect)\" (validations \(.js.denials | map(.index))), the real server names only the first: \"\($denial)\""
		elif $real == "policy error" then
			"differs: \(.name): the policy fails closed on an expression error (422), not with a validation'"'"'s message: \"\($denial)\" | run.mjs: \"\(.js.denials[0].message)\""
		else empty end' "$tmp/results.jsonl" >"$tmp/differs"
	echo "# the real apiserver beside run.mjs's CEL evaluation: $(wc -l <"$tmp/differs") difference(s)"
	sed 's/^/#   /' "$tmp/differs"
	check "every request that reached the policy: the real verdict and message are the CEL evaluation's" \
		eval "! grep -q -e '(policy): ' -e '(admitted): ' -e ': message: real' '$tmp/differs'"
fi
n=$(jq -s 'length' "$tmp/results.jsonl")
echo "# $n requests sent as evictd: $(jq -s '[.[] | select(.code == 200)] | length' "$tmp/results.jsonl") admitted, $(jq -s '[.[] | select(.code == 403)] | length' "$tmp/results.jsonl") 403, $(jq -s '[.[] | select(.code == 422)] | length' "$tmp/results.jsonl") 422"
audit "$EVICTD_SA" '.extra["authentication.kubernetes.io/node-name"][0] // "(none)"' | tr -d '"' | sort -u >"$tmp/claims"
check "the audit log has evictd's requests with each credential used (node claim $A, $B, $C, none)" \
	eval "grep -qx '$A' '$tmp/claims' && grep -qx '$B' '$tmp/claims' && grep -qx '$C' '$tmp/claims' && grep -qxF '(none)' '$tmp/claims'"
done_testing

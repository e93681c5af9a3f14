# shellcheck shell=bash
# Scenario (b): scenario (a) with evictd's status patch slowed. A validating admission webhook
# (tests/cluster/slow-webhook.py) answers each of evictd's pods/status writes in this namespace
# after 3 s, so the real API server answers the patch about 3 s late, long after the kubelet's
# PLEG (1 s relist) would see a killed pod's containers gone. A kill that did not wait would be
# restarted in place by the kubelet's pod worker (the API still says Running: a new sandbox,
# SandboxChanged); evictd holds the hard kill for the answer (--kube-hard-eviction-status-wait,
# doc/DESIGN.md §8), then the kubelet takes the terminal phase itself.
webhook_delay=${NODE_WEBHOOK_DELAY:-3}	# seconds; below --kube-hard-eviction-status-wait (5 s)
rm -f "$tmp/webhook.port"
python3 tests/cluster/slow-webhook.py --cert "$CLUSTER_DIR/pki/apiserver.crt" --key "$CLUSTER_DIR/pki/apiserver.key" \
	--delay "$webhook_delay" --port-file "$tmp/webhook.port" --log "$tmp/webhook.log" 2>"$tmp/webhook.err" &
_cluster_bg+=($!)
wait_for 10 test -s "$tmp/webhook.port"
kc apply -f - >/dev/null <<EOF2
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: evictd-test-slow-status-$NS_S}
webhooks:
- name: slow-status.evictd.test
  clientConfig:
    url: "https://127.0.0.1:$(cat "$tmp/webhook.port")/validate"
    caBundle: $(base64 -w0 "$CA")
  rules: [{apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["pods/status"]}]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS_S}}
  matchConditions:
  - name: evictd-only
    expression: "request.userInfo.username == 'system:serviceaccount:evictd-system:evictd'"
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 30
  failurePolicy: Fail
EOF2
check "a webhook that slows evictd's pods/status writes by ${webhook_delay} s is registered" \
	kc get validatingwebhookconfiguration "evictd-test-slow-status-$NS_S"

hog_evicted

reviews=$(jq -c --arg p "$hog" 'select(.name == $p and .subresource == "status")' "$tmp/webhook.log" 2>/dev/null)
if [ -n "$reviews" ] && ! jq -e --arg u "system:serviceaccount:evictd-system:evictd" 'select(.user != $u)' <<<"$reviews" >/dev/null &&
	jq -e -s --argjson d "$webhook_delay" 'all(.[]; .answered - .arrived >= $d)' <<<"$reviews" >/dev/null; then
	pass "evictd's status patch went through the webhook, answered ${webhook_delay} s late ($(wc -l <<<"$reviews") review(s))"
else
	fail "evictd's status patch went through the webhook, answered ${webhook_delay} s late" "$(cat "$tmp/webhook.log" "$tmp/webhook.err" 2>/dev/null | tail -n 5)"
fi
held=$(elog | grep -a -e "$hog_uid" -e "${hog_uid//-/_}" | grep -ao 'held [0-9.]* ms for its status report; cgroup.kill now' | head -1)
held_ms=$(grep -o '[0-9.]*' <<<"$held" | head -1)
if [ -n "$held_ms" ] && awk -v h="$held_ms" -v d="$webhook_delay" 'BEGIN { exit !(h >= d * 1000) }'; then
	pass "evictd held the hard kill for the patch's answer: $held"
else
	fail "evictd held the hard kill for the patch's answer (at least ${webhook_delay} s)" "$(elog | grep -a 'kill:' | tail -n 8)"
fi
kc delete validatingwebhookconfiguration "evictd-test-slow-status-$NS_S" --wait=false >/dev/null 2>&1

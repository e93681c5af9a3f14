#!/usr/bin/env bash
# tools/deploy/admission-policy.yaml's CEL evaluated by a CEL implementation against the requests
# evictd sends and forbidden variants, and tools/deploy/flowschema.yaml classified as the API
# server's Priority and Fairness does (tests/admission/run.mjs, which prints the TAP). The npm
# packages are pinned in tests/admission/package.json and installed by tools/install-deps.sh test.
# Then `kubectl kustomize` (offline) reads every manifest of tools/deploy as Kubernetes objects.
set -u
cd "$(dirname "$0")/../.."
if ! command -v node >/dev/null; then
	echo "1..0 # SKIP node is not installed (Node.js >= 20.19: tools/install-deps.sh test says how)"
	exit 0
fi
major=$(node -p 'process.versions.node.split(".").map(Number).reduce((a, v, i) => i < 2 ? a * 1000 + v : a, 0)')
if [ "$major" -lt 20019 ]; then
	echo "1..0 # SKIP node $(node --version) is older than 20.19, which @marcbachmann/cel-js needs"
	exit 0
fi
if [ ! -d tests/admission/node_modules/@marcbachmann/cel-js ] || [ ! -d tests/admission/node_modules/js-yaml ]; then
	echo "1..0 # SKIP tests/admission/node_modules is not installed: run tools/install-deps.sh test"
	exit 0
fi
# run.mjs prints the plan last; the kustomize check is appended to its stream.
out=$(node tests/admission/run.mjs "$PWD"); rc=$?
printf '%s\n' "$out" | grep -v '^1\.\.'
n=$(printf '%s\n' "$out" | grep -cE '^(not )?ok ')
if command -v kubectl >/dev/null; then
	tmp=$(mktemp -d /tmp/evictd-kustomize-XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	# Every manifest but the base's own kustomization.yaml (tests/cli/test_kustomize.sh).
	for f in tools/deploy/*.yaml; do
		[ "$(basename "$f")" = kustomization.yaml ] || cp "$f" "$tmp/"
	done
	list=$(for f in "$tmp"/*.yaml; do echo "  - $(basename "$f")"; done)
	printf 'resources:\n%s\n' "$list" > "$tmp/kustomization.yaml"
	n=$((n + 1))
	if kinds=$(kubectl kustomize "$tmp" 2>&1) && grep -q '^kind: FlowSchema' <<<"$kinds" &&
	   grep -q '^kind: ValidatingAdmissionPolicy$' <<<"$kinds"; then
		echo "ok $n - kubectl kustomize reads every manifest of tools/deploy (FlowSchema and policy included)"
	else
		echo "not ok $n - kubectl kustomize reads every manifest of tools/deploy"
		printf '%s\n' "$kinds" | head -20 | sed 's/^/#   /'
		rc=1
	fi
else
	n=$((n + 1))
	echo "ok $n - kubectl kustomize reads every manifest # SKIP kubectl is not installed"
fi
echo "1..$n"
exit $rc

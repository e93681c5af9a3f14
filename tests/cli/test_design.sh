#!/usr/bin/env bash
# doc/DESIGN.md names, for every behaviour rule, the file and function that implement it:
# each must exist (a definition, not a declaration), so the document cannot drift from the code.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/tap.sh

design=doc/DESIGN.md
check "doc/DESIGN.md exists" [ -f "$design" ]
rows=0
# Table rows of the rule sections: | rule | `file` | `function` |
while IFS='|' read -r _ rule file func _; do
	file=$(sed -n 's/.*`\([^`]*\)`.*/\1/p' <<<"$file")
	func=$(sed -n 's/.*`\([^`]*\)`.*/\1/p' <<<"$func")
	[ -n "$file" ] && [ -n "$func" ] || continue
	rows=$((rows + 1))
	rule=$(sed 's/^ *//; s/ *$//' <<<"$rule" | cut -c1-60)
	if [ ! -f "$file" ]; then
		fail "rule \"$rule\": $file exists"
	elif grep -qE "^[a-z_].*[^a-z_]$func\(.*[^;]$|^$func\(" "$file"; then
		pass "rule \"$rule\": $func() is defined in $file"
	else
		fail "rule \"$rule\": $func() is defined in $file"
	fi
done < <(sed -n '/^## Behaviour rules/,/^## Deliberate/p' "$design" | grep '^| ')
check "the rule tables name at least 30 places ($rows)" [ "$rows" -ge 30 ]
# Code comments cite the design document or the kubelet, never a file outside the repository.
check "no code comment cites the behaviour contract outside the repository" bash -c '! grep -rn "SPE[C] §" user bpf tests/unit tools 2>/dev/null | grep -q .'
done_testing

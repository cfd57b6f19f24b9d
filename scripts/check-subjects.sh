#!/bin/sh
# Commit subjects are at most 72 characters, the why in the body, so that
# `git log --oneline` reads as a table of contents. Checked from the first
# commit after the rule was made (the older history stays as it was);
# outside a git checkout there is nothing to check.
set -u
cd "$(dirname "$0")/.."
RULE_FROM=12612c9
git rev-parse --verify -q "$RULE_FROM^{commit}" >/dev/null 2>&1 || exit 0
long=$(git log --format='%h %s' "$RULE_FROM..HEAD" | awk 'length($0) - index($0, " ") > 72')
[ -z "$long" ] && exit 0
echo "$long"
echo "check-subjects: commit subjects over 72 characters (put the why in the body)" >&2
exit 1

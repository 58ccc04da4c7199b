#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_spdx.sh ROOT - every source file of the repository names its licence (an SPDX line within its
# first three lines). Bundled data (data/, tests/corpus/, images) is left out: its terms are in
# THIRD_PARTY_NOTICES.md. Files are listed by git when ROOT is a checkout, else by find.
set -u
root=${1:?usage: test_spdx.sh ROOT}
cd "$root" || exit 1
pattern='\.(c|h|cu|cuh|cpp|py|pyi|sh|cmake|html|in)$|(^|/)CMakeLists\.txt$'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files)
else
  files=$(find . -type f -not -path './build*' -not -path './.git/*' | sed 's#^\./##')
fi
checked=0 missing=0
while IFS= read -r f; do
  case "$f" in data/* | tests/corpus/* | docs/images/* | build*) continue ;; esac
  [[ $f =~ $pattern ]] || continue
  [ -f "$f" ] || continue
  checked=$((checked + 1))
  if ! head -n 3 "$f" | grep -q "SPDX-License-Identifier: Apache-2.0"; then
    echo "no SPDX-License-Identifier line: $f"
    missing=$((missing + 1))
  fi
done <<<"$files"
echo "$checked files checked, $missing without a licence line"
[ "$checked" -gt 100 ] && [ "$missing" -eq 0 ]

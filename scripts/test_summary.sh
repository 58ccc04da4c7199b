# SPDX-License-Identifier: Apache-2.0
# test_summary.sh - counting for scripts/test.sh (sourced): passed, failed and skipped tests of
# every ctest run and of pytest, the skipped and failed ones named, and the closing lines
#   summary: N passed, M failed, K skipped
#   skipped: NAME (reason), ...
#   failed: NAME, ...
# (the last two only when there are any).
#   count_ctest LABEL BUILD_DIR CTEST_LOG   after `ctest --test-dir BUILD_DIR ... | tee CTEST_LOG`
#   count_pytest LABEL JUNIT_XML LOG PYTHON after `pytest --junitxml=JUNIT_XML ... | tee LOG`
#   count_plain LABEL PASSED FAILED         anything else (fuzz targets)
#   print_summary
total_pass=0 total_fail=0 total_skip=0
skip_names=() fail_names=()

# ctest: its "N tests failed out of M" counts skipped tests in M (disabled ones not); the names
# come from its "did not run" and "FAILED" lists, a skip's reason from the test's own "SKIP:" line
# in Testing/Temporary/LastTest.log.
count_ctest() {
  local label=$1 dir=$2 log=$3 line f m name why s=0
  line=$(grep -E "tests failed out of [0-9]+" "$log" | tail -1 || true)
  if [ -z "$line" ]; then
    total_fail=$((total_fail + 1)); fail_names+=("$label: ctest did not finish")
    return
  fi
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
  m=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/')
  while IFS= read -r name; do
    [ -n "$name" ] || continue
    why=$(awk -v t="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Test: " { cur = $3; out = 0; next }
      /^Output:/ { out = 1; next }
      /^<end of output>/ { out = 0 }
      out && cur == t && /SKIP/ && !found { sub(/^.*SKIP:? */, ""); print; found = 1 }' \
      "$dir/Testing/Temporary/LastTest.log" 2>/dev/null)
    skip_names+=("$name [$label] (${why:-no reason printed})"); s=$((s + 1))
  done < <(sed -n '/The following tests did not run:/,/^$/p' "$log" |
             sed -nE 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/p')
  while IFS= read -r name; do
    [ -n "$name" ] && skip_names+=("$name [$label] (disabled)") && total_skip=$((total_skip + 1))
  done < <(sed -n '/The following tests did not run:/,/^$/p' "$log" |
             sed -nE 's/^[[:space:]]*[0-9]+ - (.*) \(Disabled\)$/\1/p')
  while IFS= read -r name; do
    [ -n "$name" ] && fail_names+=("$name [$label]")
  done < <(sed -n '/The following tests FAILED:/,/^[^[:space:]]/p' "$log" |
             sed -nE 's/^[[:space:]]*[0-9]+ - (.*) \([^)]*\)$/\1/p')
  total_pass=$((total_pass + m - f - s)); total_fail=$((total_fail + f))
  total_skip=$((total_skip + s))
}

# pytest: its JUnit XML, read by the Python that ran it (test ids, skip reasons).
count_pytest() {
  local label=$1 xml=$2 log=$3 py=$4 out
  if [ ! -s "$xml" ] || ! out=$("$py" - "$xml" "$label" <<'PY'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
label = sys.argv[2]
p = f = 0
for case in root.iter("testcase"):
    name = "%s::%s" % (case.get("classname", "").replace(".", "/") + ".py", case.get("name"))
    kinds = {c.tag for c in case}
    if "skipped" in kinds:
        why = next(c for c in case if c.tag == "skipped").get("message", "")
        print("S\t%s [%s] (%s)" % (name, label, why.replace("\n", " ")))
    elif kinds & {"failure", "error"}:
        print("F\t%s [%s]" % (name, label))
    else:
        print("P")
PY
  ); then
    total_fail=$((total_fail + 1)); fail_names+=("$label: pytest did not finish (see $log)")
    return
  fi
  while IFS=$'\t' read -r kind rest; do
    case $kind in
      P) total_pass=$((total_pass + 1)) ;;
      F) total_fail=$((total_fail + 1)); fail_names+=("$rest") ;;
      S) total_skip=$((total_skip + 1)); skip_names+=("$rest") ;;
    esac
  done <<<"$out"
}

count_plain() {
  total_pass=$((total_pass + $2)); total_fail=$((total_fail + $3))
  [ "$3" = 0 ] || fail_names+=("$1")
}

join_names() {
  local out="" n
  for n in "$@"; do out+="${out:+, }$n"; done
  echo "$out"
}

print_summary() {
  echo "summary: $total_pass passed, $total_fail failed, $total_skip skipped"
  [ ${#skip_names[@]} -eq 0 ] || echo "skipped: $(join_names "${skip_names[@]}")"
  [ ${#fail_names[@]} -eq 0 ] || echo "failed: $(join_names "${fail_names[@]}")"
}

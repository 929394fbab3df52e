#!/usr/bin/env bash
# Validate `phasecheck lint --format sarif` with Microsoft's SARIF validator
# (`sarif-multitool validate`, npm package @microsoft/sarif-multitool).
#
#   scripts/validate-sarif.sh [PATHS...]      # default: corpus
#
# Exit 0 when the validator reports no errors (warnings and notes are printed, not fatal);
# 1 when it reports an error; 0 with a "skipped" message when neither sarif-multitool nor
# npx is available (CI machines without node), so that it never fails a build for a
# missing tool. The JSON-schema check that needs no node runs in `cargo test`
# (tests/cli_lint.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v sarif-multitool >/dev/null 2>&1; then
  validator=(sarif-multitool)
elif command -v npx >/dev/null 2>&1 && [ "${PHASECHECK_SARIF_NPX:-0}" = 1 ]; then
  validator=(npx --yes @microsoft/sarif-multitool)
else
  echo "validate-sarif: skipped: sarif-multitool is not installed (npm i -g @microsoft/sarif-multitool)"
  exit 0
fi

paths=("$@")
[ ${#paths[@]} -eq 0 ] && paths=(corpus)

out_dir="${CARGO_TARGET_DIR:-target}/sarif"
mkdir -p "$out_dir"
sarif="$out_dir/phasecheck.sarif"

cargo build --quiet --release --bin phasecheck
bin="${CARGO_TARGET_DIR:-target}/release/phasecheck"
set +e
"$bin" lint --format sarif --output "$sarif" "${paths[@]}"
lint_rc=$?
set -e
# 0 clean, 1 findings, 3 inconclusive all produce a complete log; 2 is bad input.
if [ "$lint_rc" -eq 2 ]; then
  echo "validate-sarif: phasecheck lint reported bad input (exit 2); validating its log anyway"
fi

log="$out_dir/validate.log"
"${validator[@]}" validate "$sarif" >"$log" 2>&1 || true
cat "$log"
if grep -Eq ': error [A-Z]+[0-9]+:' "$log"; then
  echo "validate-sarif: FAILED: the validator reports errors in $sarif"
  exit 1
fi
if ! grep -q 'Analysis completed successfully' "$log"; then
  echo "validate-sarif: FAILED: the validator did not complete"
  exit 1
fi
echo "validate-sarif: ok: no errors in $sarif"

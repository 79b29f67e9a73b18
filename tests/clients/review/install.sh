#!/usr/bin/env bash
# Installs what the review card and page browser tests need on a fresh Debian machine:
# Debian's `chromium` package (when /usr/bin/chromium is missing) and a CJK font (the
# fixture vault's notes are Chinese; without it the screenshots show boxes), with apt-get,
# and playwright-core from npm into a temp folder. Playwright never downloads a browser
# here: the tests launch /usr/bin/chromium. Prints that folder (run.sh passes it to the
# tests as KB_REVIEW_TOOLS).
#
#   bash tests/clients/review/install.sh
set -euo pipefail

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
[ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || missing+=(fonts-wqy-microhei)
if [ ${#missing[@]} -gt 0 ]; then
  apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
  [ "$(id -u)" -eq 0 ] || apt=(sudo "${apt[@]}")
  log="${TMPDIR:-/tmp}/kb-mcp-review-apt.log"
  if ! { "${apt[@]}" update -qq && "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    echo "install.sh: apt-get install ${missing[*]} failed (see $log)" >&2
    exit 1
  fi
fi

work="${KB_REVIEW_TOOLS:-${TMPDIR:-/tmp}/kb-mcp-review-tools}"
mkdir -p "$work"
if ! grep -qs '"version": "1.64.1"' "$work/node_modules/playwright-core/package.json"; then
  ( cd "$work" && { [ -f package.json ] || npm init -y >/dev/null; } \
      && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --silent --no-audit --no-fund \
         playwright-core@1.64.1 >/dev/null )
fi
echo "$work"

# shellcheck shell=bash
# Sourced by scripts/test: the browser tests drive Debian's Chromium (/usr/bin/chromium) with
# Playwright; no browser is ever downloaded by a test tool. Installed here when missing and we
# may (root with apt-get); otherwise the browser tests skip (or fail with CI=true) with a reason.
chromium="${TIDINGS_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]] && command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    echo "installing Debian's chromium for the browser tests ..." >&2
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
            >/tmp/tidings-apt.log 2>&1; then
        echo "warning: could not install chromium (see /tmp/tidings-apt.log)" >&2
    fi
fi

# shellcheck shell=bash
# Sourced by scripts/test and scripts/demo: make sure .venv exists and holds this checkout,
# installed editable. Needs only python3 (3.11+) and network access to PyPI.
# TIDINGS_EXTRAS names the extras to install: scripts/test asks for "test" (pytest, browsers'
# driver, linters), scripts/demo for none (the runtime alone). pip runs again only when
# pyproject.toml changes or extras are wanted that are not there yet (the pyproject hash and the
# extras are kept in .venv/.tidings-installed).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
python="${PYTHON:-python3}"

# A venv whose python or pip is missing (an interrupted first run, a moved checkout) is remade.
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$venv"
    if ! "$python" -m venv "$venv"; then
        echo "error: '$python -m venv' failed; on Debian/Ubuntu install python3-venv" >&2
        exit 1
    fi
fi

extras="${TIDINGS_EXTRAS-test}"
stamp="$venv/.tidings-installed"
hash="$("$venv/bin/python" -c 'import hashlib, sys
print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$root/pyproject.toml")"
have_hash="" have_extras=""
if [[ -f "$stamp" ]]; then read -r have_hash have_extras <"$stamp" || true; fi
if [[ "$have_hash" != "$hash" || ( -n "$extras" && "$have_extras" != "$extras" ) ]]; then
    if [[ -n "$extras" ]]; then
        echo "installing tidings and its $extras dependencies into .venv ..." >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root[$extras]"
    else
        echo "installing tidings into .venv ..." >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root"
    fi
    echo "$hash $extras" >"$stamp"
fi

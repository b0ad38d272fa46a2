# shellcheck shell=bash
# Sourced by scripts/test and scripts/demo: make sure .venv exists and holds this checkout,
# installed editable. Needs only python3 (3.11+) and network access to PyPI.
# TIDINGS_EXTRAS names the extras to install: scripts/test asks for "test" (pytest, browsers'
# driver, linters), scripts/demo for none (the runtime alone). With "test" or "bench" among them
# the benchmarks package (benchmarks/, `tidings bench`, with matplotlib for --plot) is installed
# editable too; "bench" is not an extra of tidings itself. pip runs again only when a
# pyproject.toml changes or extras are wanted that are not there yet (the pyprojects' hash and
# the extras are kept in .venv/.tidings-installed).

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
print(hashlib.sha256(b"".join(open(p, "rb").read() for p in sys.argv[1:])).hexdigest())' \
    "$root/pyproject.toml" "$root/benchmarks/pyproject.toml")"
have_hash="" have_extras=""
if [[ -f "$stamp" ]]; then read -r have_hash have_extras <"$stamp" || true; fi
if [[ "$have_hash" != "$hash" || ( -n "$extras" && "$have_extras" != "$extras" ) ]]; then
    own=() bench=()
    IFS=, read -ra wanted <<<"$extras"
    for extra in "${wanted[@]}"; do
        case "$extra" in
            bench) bench=(-e "$root/benchmarks[plot]") ;;
            test) own+=("$extra"); bench=(-e "$root/benchmarks[plot]") ;;
            ?*) own+=("$extra") ;;
        esac
    done
    target="$root"
    if ((${#own[@]})); then target="$root[$(IFS=,; echo "${own[*]}")]"; fi
    echo "installing tidings${extras:+ and its $extras dependencies} into .venv ..." >&2
    # one pip run: the benchmarks' requirement "tidings" is met by this checkout
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$target" \
        "${bench[@]}"
    echo "$hash $extras" >"$stamp"
fi

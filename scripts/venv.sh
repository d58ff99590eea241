# Sourced by run.sh and test.sh: make and activate the project's own virtual environment
# (.venv beside the code), so nothing is installed into the system Python (Debian 12 and
# Ubuntu 23.04+ mark it externally managed). GRADFLOW_PYTHON picks the interpreter (>= 3.11).
# Usage: source scripts/venv.sh EXTRAS   (EXTRAS: "" for the app, "[test]" for the tests;
#        "--functions" only defines the functions below, for tests/test_install_scripts.py)
# torch: on Linux, PyPI's torch is a multi-GB CUDA build; the app needs only the CPU build, from PyTorch's
# own index, which is asked for only when it answers within 3 s (an offline machine or a local mirror
# installs as before, with no pip retrying an unreachable index for minutes). GRADFLOW_TORCH_INDEX: another
# index to ask (on any system), or "none".
set -euo pipefail
project_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv_dir="${GRADFLOW_VENV:-$project_root/.venv}"
extras="${1:-}"

find_python() {
    local candidate
    for candidate in "${GRADFLOW_PYTHON:-}" python3.11 python3.12 python3.13 python3; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"; return 0
        fi
    done
    return 1
}

# The extra index to take torch from, on stdout ("" for none); what was decided, on stderr. $1: a Python.
torch_index() {
    local url
    if [ -n "${GRADFLOW_TORCH_INDEX:-}" ]; then
        url="$GRADFLOW_TORCH_INDEX"
        [ "$url" != none ] || return 0
    elif [ "$(uname -s)" = Linux ]; then
        url="https://download.pytorch.org/whl/cpu"
    else
        return 0   # macOS and Windows: PyPI's torch is the CPU build
    fi
    # a thread, so that a name lookup that hangs is cut short as well (macOS has no `timeout` command)
    if "$1" -c 'import sys, threading, urllib.request as r
ok = []
ask = lambda: ok.append(r.urlopen(r.Request(sys.argv[1], method="HEAD"), timeout=3))
asking = threading.Thread(target=ask, daemon=True)
asking.start()
asking.join(4)
sys.exit(not ok)' "$url/torch/" 2>/dev/null; then
        echo "gradflow: torch from $url (an extra index)" >&2
        echo "$url"
    else
        echo "gradflow: $url did not answer: torch from pip's usual sources (on Linux PyPI's is the CUDA build)" >&2
    fi
}

[ "$extras" != --functions ] || return 0

if [ ! -x "$venv_dir/bin/python" ]; then
    python="$(find_python)" || {
        echo "gradflow: needs Python 3.11 or newer with the venv module (Debian/Ubuntu: sudo apt install python3-venv)." >&2
        exit 2
    }
    echo "gradflow: creating a virtual environment in $venv_dir with $("$python" --version)" >&2
    if command -v uv >/dev/null 2>&1; then
        uv venv --quiet --python "$python" "$venv_dir"
    else
        "$python" -m venv "$venv_dir" || {
            echo "gradflow: '$python -m venv' failed (Debian/Ubuntu: sudo apt install python3-venv)." >&2
            exit 2
        }
    fi
fi

# Install (or bring up to date) only when pyproject.toml changed since the last install.
stamp="$venv_dir/.gradflow-installed$(echo "$extras" | tr -d "[]")"
if [ ! -f "$stamp" ] || [ "$project_root/pyproject.toml" -nt "$stamp" ]; then
    echo "gradflow: installing the project$extras into $venv_dir (first time takes a few minutes)" >&2
    index="$(torch_index "$venv_dir/bin/python")"
    if [ -x "$venv_dir/bin/pip" ] || "$venv_dir/bin/python" -m pip --version >/dev/null 2>&1; then
        "$venv_dir/bin/python" -m pip install --quiet --disable-pip-version-check ${index:+--extra-index-url "$index"} \
            -e "$project_root$extras"
    else   # made by uv: no pip inside; uv takes a package from the first index that has it unless told otherwise
        uv pip install --quiet --python "$venv_dir/bin/python" \
            ${index:+--extra-index-url "$index" --index-strategy unsafe-best-match} -e "$project_root$extras"
    fi
    touch "$stamp"
fi
export PATH="$venv_dir/bin:$PATH"
export VIRTUAL_ENV="$venv_dir"

# Windows: install the project with its test extras into .venv and run the tests (as scripts/test.sh):
# the full suite, or with -Fast the fast tier (everything not marked `slow` or `window`). Other arguments go to pytest.
param([switch]$Fast)
$ErrorActionPreference = "Stop"
. "$PSScriptRoot\venv.ps1" -Extras "[test,cluster]"
Set-Location $ProjectRoot
$env:QT_QPA_PLATFORM = "offscreen"

if ($Fast) {
    & $Python -m pytest -n auto --dist loadgroup -m "not slow and not window" @args
} else {
    & $Python -m pytest -n auto --dist loadgroup --durations=20 @args
}
exit $LASTEXITCODE

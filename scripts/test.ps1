# Windows: install the project with its test extras into .venv and run the tests (as scripts/test.sh):
# the full suite, or with -Fast the fast tier (everything not marked `slow` or `window`). Other arguments go to pytest.
param([switch]$Fast)
$ErrorActionPreference = "Stop"
. "$PSScriptRoot\venv.ps1" -Extras "[test,cluster]"
Set-Location $ProjectRoot
$env:QT_QPA_PLATFORM = "offscreen"
$Spread = @("-n", "auto", "--dist", "loadgroup", "--max-worker-restart=0")   # a crashed worker ends the run (test.sh)

if ($Fast) {
    & $Python -m pytest @Spread -m "not slow and not window" @args
} else {
    & $Python -m pytest @Spread --durations=20 @args
}
exit $LASTEXITCODE

# Windows: install the project with its test extras into .venv and run the whole test suite (as scripts/test.sh).
$ErrorActionPreference = "Stop"
. "$PSScriptRoot\venv.ps1" -Extras "[test,cluster]"
Set-Location $ProjectRoot
$env:QT_QPA_PLATFORM = "offscreen"
& $Python -m pytest tests @args
exit $LASTEXITCODE

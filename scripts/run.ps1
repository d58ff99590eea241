# Windows: install the project into .venv and open the app (the same as scripts/run.sh).
$ErrorActionPreference = "Stop"
. "$PSScriptRoot\venv.ps1" -Extras ""
& $Python -m gradflow @args
exit $LASTEXITCODE

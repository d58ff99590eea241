# Dot-sourced by run.ps1 and test.ps1 (Windows PowerShell 5.1 or PowerShell 7): make and use the project's
# own virtual environment (.venv beside the code), as scripts/venv.sh does on Linux and macOS.
# GRADFLOW_PYTHON picks the interpreter (>= 3.11); otherwise the py launcher's newest 3.11+, then python.
# Usage: . "$PSScriptRoot\venv.ps1" -Extras ""   (or "[test]")
param([string]$Extras = "")
$ErrorActionPreference = "Stop"
$ProjectRoot = Split-Path -Parent $PSScriptRoot
$VenvDir = if ($env:GRADFLOW_VENV) { $env:GRADFLOW_VENV } else { Join-Path $ProjectRoot ".venv" }
$Python = Join-Path $VenvDir "Scripts\python.exe"

if (-not (Test-Path -LiteralPath $Python)) {
    $candidates = @($env:GRADFLOW_PYTHON, "py -3.13", "py -3.12", "py -3.11", "python") | Where-Object { $_ }
    $found = $null
    foreach ($candidate in $candidates) {
        $exe, $rest = $candidate -split " "
        if (-not (Get-Command $exe -ErrorAction SilentlyContinue)) { continue }
        & $exe @rest -c "import sys, venv; sys.exit(sys.version_info < (3, 11))" 2>$null
        if ($LASTEXITCODE -eq 0) { $found = $candidate; break }
    }
    if (-not $found) {
        Write-Host "gradflow: needs Python 3.11 or newer (https://www.python.org/downloads/)"
        exit 2
    }
    Write-Host "gradflow: creating a virtual environment in $VenvDir with $found"
    $exe, $rest = $found -split " "
    & $exe @rest -m venv $VenvDir
    if ($LASTEXITCODE -ne 0) { exit 2 }
}

# Install (or bring up to date) only when pyproject.toml changed since the last install.
$Stamp = Join-Path $VenvDir (".gradflow-installed" + $Extras.Trim("[", "]"))
$Pyproject = Join-Path $ProjectRoot "pyproject.toml"
if (-not (Test-Path -LiteralPath $Stamp) -or
        (Get-Item -LiteralPath $Pyproject).LastWriteTime -gt (Get-Item -LiteralPath $Stamp).LastWriteTime) {
    Write-Host "gradflow: installing the project$Extras into $VenvDir (first time takes a few minutes)"
    & $Python -m pip install --quiet --disable-pip-version-check -e "$ProjectRoot$Extras"
    if ($LASTEXITCODE -ne 0) { exit 1 }
    New-Item -ItemType File -Force -Path $Stamp | Out-Null
}
$env:VIRTUAL_ENV = $VenvDir
$env:PATH = (Join-Path $VenvDir "Scripts") + [IO.Path]::PathSeparator + $env:PATH

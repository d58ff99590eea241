# Dot-sourced by run.ps1 and test.ps1 (Windows PowerShell 5.1 or PowerShell 7): make and use the project's
# own virtual environment (.venv beside the code), as scripts/venv.sh does on Linux and macOS.
# GRADFLOW_PYTHON picks the interpreter (>= 3.11); otherwise the py launcher's newest 3.11+, then python.
# torch: PyPI's Windows wheel is the CPU build already; GRADFLOW_TORCH_INDEX names another index to ask as well,
# used only when it answers within a few seconds (as in venv.sh).
# Usage: . "$PSScriptRoot\venv.ps1" -Extras ""   (or "[test]")
param([string]$Extras = "")
$ErrorActionPreference = "Stop"
$ProjectRoot = Split-Path -Parent $PSScriptRoot
$VenvDir = if ($env:GRADFLOW_VENV) { $env:GRADFLOW_VENV } else { Join-Path $ProjectRoot ".venv" }
$Python = Join-Path $VenvDir "Scripts\python.exe"

if (-not (Test-Path -LiteralPath $Python)) {
    $candidates = @(@("py", "-3.13"), @("py", "-3.12"), @("py", "-3.11"), @("python"))
    if ($env:GRADFLOW_PYTHON) { $candidates = @(, @($env:GRADFLOW_PYTHON)) + $candidates }   # a path may have spaces
    $found = $null
    foreach ($candidate in $candidates) {
        $exe, $rest = $candidate[0], @($candidate | Select-Object -Skip 1)
        if (-not (Get-Command $exe -ErrorAction SilentlyContinue)) { continue }
        # Windows PowerShell 5.1 turns a native command's redirected stderr ("py -3.13": no such Python) into
        # an error, which "Stop" makes fatal (and $LASTEXITCODE stale): such a candidate is just not the one
        $check = "import sys, venv; sys.exit(sys.version_info < (3, 11))"
        try { & $exe @rest -c $check 2>$null; $ok = $LASTEXITCODE -eq 0 } catch { $ok = $false }
        if ($ok) { $found = $candidate; break }
    }
    if (-not $found) {
        Write-Host "gradflow: needs Python 3.11 or newer (https://www.python.org/downloads/)"
        exit 2
    }
    Write-Host "gradflow: creating a virtual environment in $VenvDir with $($found -join ' ')"
    & $exe @rest -m venv $VenvDir
    if ($LASTEXITCODE -ne 0) { exit 2 }
}

# Install (or bring up to date) only when pyproject.toml changed since the last install.
$Stamp = Join-Path $VenvDir (".gradflow-installed" + $Extras.Trim("[", "]"))
$Pyproject = Join-Path $ProjectRoot "pyproject.toml"
if (-not (Test-Path -LiteralPath $Stamp) -or
        (Get-Item -LiteralPath $Pyproject).LastWriteTime -gt (Get-Item -LiteralPath $Stamp).LastWriteTime) {
    Write-Host "gradflow: installing the project$Extras into $VenvDir (first time takes a few minutes)"
    $TorchIndex = @()
    $Index = $env:GRADFLOW_TORCH_INDEX
    if ($Index -and $Index -ne "none") {   # the probe of venv.sh: a thread, so a hanging name lookup is cut short too
        $Probe = "import sys, threading, urllib.request as r; ok = []; " +
                 "t = threading.Thread(daemon=True, target=lambda: ok.append(r.urlopen(" +
                 "r.Request(sys.argv[1], method='HEAD'), timeout=3))); t.start(); t.join(4); sys.exit(not ok)"
        try { & $Python -c $Probe "$Index/torch/" 2>$null; $ok = $LASTEXITCODE -eq 0 } catch { $ok = $false }
        if ($ok) {
            Write-Host "gradflow: torch from $Index (an extra index)"
            $TorchIndex = @("--extra-index-url", $Index)
        } else {
            Write-Host "gradflow: $Index did not answer: torch from pip's usual sources"
        }
    }
    & $Python -m pip install --quiet --disable-pip-version-check @TorchIndex -e "$ProjectRoot$Extras"
    if ($LASTEXITCODE -ne 0) { exit 1 }
    New-Item -ItemType File -Force -Path $Stamp | Out-Null
}
$env:VIRTUAL_ENV = $VenvDir
$env:PATH = (Join-Path $VenvDir "Scripts") + [IO.Path]::PathSeparator + $env:PATH

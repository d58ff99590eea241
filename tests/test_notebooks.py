"""The notebooks in docs/notebooks run in a real Jupyter kernel (nbclient + ipykernel) with no error cell, and
produce what they say: tables of the expected shapes, inline PNG figures, a saved file."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def _text(cell) -> str:
    return "".join(output.get("text", "") + output.get("data", {}).get("text/plain", "")
                   for output in cell.outputs)


@pytest.mark.slow
def test_the_quickstart_notebook_runs_in_a_kernel(tmp_path):
    notebook = nbformat.read(ROOT / "docs" / "notebooks" / "quickstart.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    errors = [output for cell in code for output in cell.outputs if output.output_type == "error"]
    assert not errors, errors[0].get("evalue")
    assert "vanishing" in _text(code[0])
    assert "(15, 3)" in _text(code[1])                          # 5 ρ × 3 seeds
    assert "(40, 10)" in _text(code[2]) and "(2000, 7)" in _text(code[2])   # 40 steps; 40 × T = 50 profile rows
    assert "(90, 11)" in _text(code[4])                         # 3 cells × 30 steps, with the run column
    images = [output for cell in code for output in cell.outputs if "image/png" in output.get("data", {})]
    assert len(images) == 2
    assert (tmp_path / "vanishing.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_the_papers_notebook_reproduces_its_three_results_in_a_kernel(tmp_path):
    """Each section asserts its result on the numbers (a failing assert is an error cell) and draws one figure."""
    notebook = nbformat.read(ROOT / "docs" / "notebooks" / "papers.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    errors = [output for cell in code for output in cell.outputs if output.output_type == "error"]
    assert not errors, errors[0].get("evalue")
    text = "".join(_text(cell) for cell in code)
    assert "largest ‖∂L/∂h_t‖ / bound = 0.6" in text and "b- = -2.344390" in text and "largest difference" in text
    images = [output for cell in code for output in cell.outputs if "image/png" in output.get("data", {})]
    assert len(images) == 3


@pytest.mark.slow
def test_the_meanfield_notebook_fits_ln_chi1_from_a_sweep_in_a_kernel(tmp_path):
    """The sweep's profiles alone give the per-step slope of ln E‖∂L/∂h_t‖², asserted against ln χ₁ in the notebook."""
    notebook = nbformat.read(ROOT / "docs" / "notebooks" / "meanfield.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    errors = [output for cell in code for output in cell.outputs if output.output_type == "error"]
    assert not errors, errors[0].get("evalue")
    assert "(36, 100) rows × columns; errors: 0" in _text(code[0])     # 3 σ_w × 12 seeds; T = 40 profiles × 2
    assert _text(code[1]).count("ln χ₁ = ") == 3
    images = [output for cell in code for output in cell.outputs if "image/png" in output.get("data", {})]
    assert len(images) == 1


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "notebooks").glob("*.ipynb")))
def test_notebooks_are_kept_without_outputs(path):
    """Outputs are made by running them (this test file), not stored: the repository holds the code alone."""
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")

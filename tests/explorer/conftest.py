import pytest
from PySide6.QtCore import QSettings, QStandardPaths


@pytest.fixture(autouse=True)
def private_settings(tmp_path):
    """Nothing in the GUI tests may read or write the user's real settings or logs."""
    QStandardPaths.setTestModeEnabled(True)
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, str(tmp_path / "user"))
        QSettings.setPath(fmt, QSettings.Scope.SystemScope, str(tmp_path / "system"))

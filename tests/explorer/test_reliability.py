"""Empty: its tests now live in files named by feature (test_recovery, test_error_reporting, test_settings_fields,
test_main_window). test_engine_process still imports these three names from here; once it takes them from
window_helpers, delete this file."""
from window_helpers import STABLE, bar_button, step_once  # noqa: F401 - tests/explorer is on sys.path

"""What the browser benchmarks (`bench_latency.py`, `bench_load.py`) rely on in the app:
page titles, headings, test ids, widget keys and texts. After a refactor of the app,
adjust this file (and each script's own configuration block) only."""

APP_SCRIPT = "app.py"
# Sidebar navigation titles, in the order they are cycled, and the start of the level-1
# heading each page shows (checked after each switch, outside the timing).
APP_PAGES = {
    "Overview": "KIEval Workbench",
    "Documents": "Documents",
    "Errors": "Errors",
    "Automation": "Automation",
    "Compare": "Compare",
    "Metrics guide": "Metrics guide",
}
APP_FIRST_NUMBER = "stTable"  # test id of the element that shows the first numbers (headline table)
# The file uploaders (Overview page): their keys end in a counter (a new widget after each upload).
APP_UPLOAD_GT = '[class*="st-key-upload_gt_"]'
APP_UPLOAD_PREDICTIONS = '[class*="st-key-upload_pred_"]'
APP_UPLOAD_IMAGES = '[class*="st-key-upload_images_"]'
APP_GT_LOADED = "Ground truth loaded."  # text shown once a ground truth without predictions is read
# The sidebar's line on what is loaded: group 1 the ground truth's file name, group 2 the
# number of prediction files (a regular expression both Python and JavaScript read).
APP_DATA_CAPTION = r"Ground truth (\S+) \([^)]*\), (\d+) prediction files?"

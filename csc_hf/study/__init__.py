"""`csc-bench run`: the paper's study end to end — build → pretrain → train the variant grid → evaluate every model on
every test config → results (json, csv, markdown table, plots, report).

A preset (``trainer_configs/presets/NAME.yaml``, or any YAML path) says everything a run does; its
``augmentation`` (:class:`AugmentationStudy`) adds the SIGHAN-credibility stage: models trained once more with an
augmentation confusion set, compared with the grid's on SIGHAN-15 and on the controlled test sets. Each stage's output
lives in ``RUN_DIR/stages/STAGE-KEY`` where KEY hashes the stage's inputs (its configuration and the keys of the
stages it reads), and a ``done.json`` marks it finished: a re-run skips finished stages, a changed preset redoes only
what it changes, and an interrupted training resumes from its last checkpoint. Each stage that runs logs a progress
line (stage k of N, elapsed time, an ETA from the stage times recorded so far: :class:`Progress`) to the ``csc_hf``
logger. A run may do a part of the grid (``variants``, ``seeds``); its results cover every finished evaluation of the
preset in the run folder.

The package: ``preset`` (a study as data), ``progress`` (stage folders, the plan, the ETA), ``run`` (the orchestration
only: training is :mod:`csc_hf.training`, evaluation :mod:`csc_hf.evaluation`) and ``outputs`` (the results files and
the report: :mod:`csc_hf.results` analyses, :mod:`csc_hf.report` renders).
"""

from .preset import AugmentationStudy, Preset
from .run import OverHours, Study, Unfinished

__all__ = ["AugmentationStudy", "OverHours", "Preset", "Study", "Unfinished"]

"""On aider's PYTHONPATH in the contract tests (see ``AIDER_RETRY`` in tests/real_clis/homes.py).

aider retries an API error such as a 500 with a doubling delay until the delay passes
``aider.models.RETRY_TIMEOUT`` (60 s; no option or variable changes it): about a minute of sleep
before it gives up. Python imports this module at start-up, before aider's own modules read that
limit: at 1 s, aider retries three times instead of eight, with the same messages, and gives
up after 1.75 s.
"""

import aider.models

aider.models.RETRY_TIMEOUT = 1

"""Paging that knows dependencies: while a check fails, the checks that depend on it are held back.

- `decision`: pure. Whether a run's result asks for a hold (`request_for`), which windows a parent's failure
  opens and for how long (`windows`), and the environment rules (`hold_back_problems`).
- `inhibitor`: the one deployed identity holding the Vigilmon API key; it opens the windows a request asks for,
  bounded and all or nothing (`outpost.windows`), never on the parent's own monitor.
- `senders`: the seam a parent's run asks through: a direct call (`outpost run`, tests), a Lambda asynchronous
  invocation (AWS), an HTTP request with an ID token (Cloud Functions).
The mechanism is Vigilmon's documented maintenance call only (docs/contracts.md "Hold-back"): windows are short
and renewed by each failing run of the parent, so when the parent's function dies or cannot reach the inhibitor
they lapse and every monitor alerts as it would without hold-back.
"""

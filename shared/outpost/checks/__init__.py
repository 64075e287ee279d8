"""One module per check: `Params`, a read-only `fetch`, a pure `evaluate`, and its `CHECK` spec."""

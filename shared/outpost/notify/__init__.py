"""What to do reaches the person: the message a check's cloud alarm sends when its state changes (opt-in,
`messages.enabled`; docs/contracts.md "Cloud alarms").

A check's function has no state to see a state change with; its alarms do. The notifier, one more function of the
stage, is one of every acting alarm's actions (AWS: a Lambda action beside the SNS topic; Google Cloud: a Pub/Sub
notification channel beside the others), so the page never depends on it.

- `message`: pure. The run line it reads (`RunLine`), the alarm's own facts (`AlarmFacts`), and the message:
  redacted, control characters escaped, capped at `messages.max_bytes` (`compose`).
- `events`: the alarm's state change as each cloud delivers it, parsed at the edge (`from_cloudwatch`,
  `from_incident`): a malformed event is an `InvocationError` naming the field, never a message.
- `seams`: the outside systems, one class each: the run line from CloudWatch Logs or Cloud Logging, the message
  to SNS or Pub/Sub. Each failure is a `ReportError` naming the system and the cause, never a token.
- `notifier`: one state change in, one message out (`notify`); when the run line cannot be read the message still
  goes, with the alarm's own facts and one line saying why the details are missing.
"""

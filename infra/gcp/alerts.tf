# The cloud side of the alerting (outpost.tooling.alerting; docs/deploying-gcp.md "Alert policies"): every run's
# log line is counted by check and outcome, and each check gets the same four policies as on AWS: failed (pages
# for a critical check), flapping, error and degraded (notify). Silence, a check that stops running at all, is its
# Vigilmon monitor's alert and none of these.

# One per counted run line (`jsonPayload.status` is its outcome), by check and outcome: Cloud Scheduler's runs,
# never an on-demand `report=false` run.
resource "google_logging_metric" "runs" {
  name        = "outpost/${var.environment}/runs"
  description = "Outpost ${var.environment}: one per check run (its log line), by check and outcome."
  filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=~\"^outpost-${var.environment}-\"",
    "jsonPayload.environment=\"${var.environment}\"",
    "jsonPayload.counted=true",
    "jsonPayload.status:*",
  ])

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "Outpost ${var.environment} check runs"
    labels {
      key         = "check"
      value_type  = "STRING"
      description = "The check that ran."
    }
    labels {
      key         = "status"
      value_type  = "STRING"
      description = "The run's outcome: ok, degraded, failed or error."
    }
  }

  label_extractors = {
    check  = "EXTRACT(jsonPayload.check)"
    status = "EXTRACT(jsonPayload.status)"
  }
}

# More than `threshold` runs of `status` within the last `window_seconds` (one run per schedule period): M of N
# runs, as the CloudWatch alarms count them on AWS. Held back (hold_back.enabled, a check that depends on others:
# docs/contracts.md "Cloud alarms"), the policy also needs its parents quiet: combiner AND with one condition per
# group of parents, "fewer than `runs` failed-or-error runs of each within `window_seconds`", met on missing data
# (a healthy parent, or one whose function died, writes no such line) and only after `duration_seconds` in a row;
# the dependant's own condition waits `wait_seconds`. CloudWatch's actions suppressor, on Cloud Monitoring.
resource "google_monitoring_alert_policy" "check" {
  for_each     = var.alarms
  display_name = each.value.display_name
  combiner     = length(each.value.quiet) > 0 ? "AND" : "OR"
  severity     = each.value.tier == "page" ? "CRITICAL" : "WARNING"
  user_labels  = merge(local.labels, { check = each.value.check, tier = each.value.tier })

  # With messages on, the incidents channel beside the tier's channels: the notifier publishes what to do, and the
  # page never depends on it.
  notification_channels = concat(
    each.value.tier == "page" ? var.page_notification_channels : var.notify_notification_channels,
    google_monitoring_notification_channel.incidents[*].id,
  )

  conditions {
    display_name = each.value.summary

    condition_threshold {
      filter = join(" AND ", [
        "metric.type=\"logging.googleapis.com/user/${google_logging_metric.runs.name}\"",
        "resource.type=\"cloud_run_revision\"",
        "metric.label.check=\"${each.value.check}\"",
        "metric.label.status=\"${each.value.status}\"",
      ])
      comparison      = "COMPARISON_GT"
      threshold_value = each.value.threshold
      duration        = "${each.value.wait_seconds}s"
      # No run line in the window is no run of that outcome: the condition is not met. Silence is the Vigilmon
      # monitor's alert (it alerts once the tolerated misses have passed); alerting on it here too would be a
      # second page for one outage, and holding an incident open would outlive a check that stopped running.
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"

      aggregations {
        alignment_period     = "${each.value.window_seconds}s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.check"]
      }

      trigger {
        count = 1
      }
    }
  }

  dynamic "conditions" {
    for_each = each.value.quiet
    content {
      display_name = "Held back while ${join(", ", conditions.value.checks)} fails or cannot observe"

      condition_threshold {
        filter = join(" AND ", [
          "metric.type=\"logging.googleapis.com/user/${google_logging_metric.runs.name}\"",
          "resource.type=\"cloud_run_revision\"",
          # Check names are lowercase letters, digits and dashes: nothing a regular expression reads specially.
          "metric.label.check=monitoring.regex.full_match(\"${join("|", conditions.value.checks)}\")",
          "metric.label.status=monitoring.regex.full_match(\"failed|error\")",
        ])
        comparison      = "COMPARISON_LT"
        threshold_value = conditions.value.runs
        duration        = "${conditions.value.duration_seconds}s"
        # A parent with no failed or error line in the window holds nothing back: healthy, or its function is dead
        # (its Vigilmon monitor pages on the silence), and then its dependants alert as without hold-back.
        evaluation_missing_data = "EVALUATION_MISSING_DATA_ACTIVE"

        aggregations {
          alignment_period     = "${conditions.value.window_seconds}s"
          per_series_aligner   = "ALIGN_SUM"
          cross_series_reducer = "REDUCE_SUM"
          group_by_fields      = ["metric.label.check"]
        }

        # Every parent's series below `runs`: one parent failing is enough to hold back.
        trigger {
          percent = 100
        }
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = <<-EOT
      ${each.value.summary}.

      Runbook: ${var.runbook_base_url}${each.value.runbook_path}

      Latest run, in Logs Explorer (newest first):

          ${each.value.logs_query}

      A check that stops running at all is its Vigilmon monitor's alert, not this policy's.
    EOT
  }
}

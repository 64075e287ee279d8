# What to do reaches the person (messages.enabled; docs/contracts.md "Cloud alarms", docs/deploying-gcp.md
# "Messages"): every alert policy also notifies a Pub/Sub channel, the incidents topic; the notifier function,
# triggered by each incident's notification (schema 1.2), reads the check's latest run line and publishes its
# summary and next steps, redacted and capped, to var.messages_topic. It is a channel beside the tier's ones: a
# notifier that fails tells nobody less than before.

data "google_project" "this" {
  count      = var.notifier == null ? 0 : 1
  project_id = var.project
}

resource "google_pubsub_topic" "incidents" {
  count  = var.notifier == null ? 0 : 1
  name   = var.notifier.incidents_topic
  labels = local.labels
}

# Cloud Monitoring publishes a Pub/Sub channel's notifications as its notification service agent.
resource "google_pubsub_topic_iam_member" "incidents_monitoring" {
  count  = var.notifier == null ? 0 : 1
  topic  = google_pubsub_topic.incidents[0].id
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:service-${data.google_project.this[0].number}@gcp-sa-monitoring-notification.iam.gserviceaccount.com"
}

resource "google_monitoring_notification_channel" "incidents" {
  count        = var.notifier == null ? 0 : 1
  display_name = "Outpost ${var.environment} incidents (notifier)"
  type         = "pubsub"
  description  = "Every Outpost ${var.environment} alert policy's incidents, for the notifier function."
  user_labels  = local.labels
  labels = {
    topic = google_pubsub_topic.incidents[0].id
  }

  depends_on = [google_pubsub_topic_iam_member.incidents_monitoring]
}

# The notifier's own identity: it reads log entries (the checks' run lines) and publishes to the messages topic.
resource "google_service_account" "notifier" {
  count        = var.notifier == null ? 0 : 1
  account_id   = var.notifier.account_id
  display_name = "Outpost ${var.environment} notifier"
  description  = "Identity of the Outpost ${var.environment} notifier: reads the checks' run lines, publishes to the messages topic."
}

# logging.logEntries.list: the predefined role that grants it (Cloud Logging's access control: roles/logging.viewer
# reads the project's logs but the Data Access audit logs and other private logs).
resource "google_project_iam_member" "notifier_logs" {
  count   = var.notifier == null ? 0 : 1
  project = var.project
  role    = "roles/logging.viewer"
  member  = "serviceAccount:${google_service_account.notifier[0].email}"
}

resource "google_pubsub_topic_iam_member" "notifier_publish" {
  count  = var.notifier == null ? 0 : 1
  topic  = var.messages_topic
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:${google_service_account.notifier[0].email}"
}

resource "google_cloudfunctions2_function" "notifier" {
  count       = var.notifier == null ? 0 : 1
  name        = var.notifier.function_name
  location    = var.region
  description = var.notifier.description
  labels      = merge(local.labels, { function = "notifier" })

  build_config {
    runtime     = var.runtime
    entry_point = var.notifier.entry_point
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    max_instance_count    = 3
    min_instance_count    = 0
    available_memory      = var.memory
    timeout_seconds       = var.notifier.timeout_seconds
    service_account_email = google_service_account.notifier[0].email
    # Only Eventarc's push subscription calls it.
    ingress_settings               = "ALLOW_INTERNAL_ONLY"
    all_traffic_on_latest_revision = true
    environment_variables = {
      OUTPOST_CONFIG           = var.config_path
      OUTPOST_MESSAGES_TOPIC   = var.messages_topic
      OUTPOST_RUNBOOK_BASE_URL = var.runbook_base_url
    }
  }

  event_trigger {
    trigger_region        = var.region
    event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
    pubsub_topic          = google_pubsub_topic.incidents[0].id
    retry_policy          = "RETRY_POLICY_DO_NOT_RETRY"
    service_account_email = google_service_account.notifier[0].email
  }

  lifecycle {
    precondition {
      condition     = var.messages_topic != ""
      error_message = "messages.enabled: set messages_topic, the Pub/Sub topic (projects/P/topics/T) the notifier publishes to."
    }
  }

  depends_on = [google_project_iam_member.notifier_logs, google_pubsub_topic_iam_member.notifier_publish]
}

# The trigger's push subscription calls the notifier as the notifier's own account: run.invoker for it alone.
resource "google_cloud_run_service_iam_member" "notifier" {
  count    = var.notifier == null ? 0 : 1
  project  = var.project
  location = google_cloudfunctions2_function.notifier[0].location
  service  = google_cloudfunctions2_function.notifier[0].name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.notifier[0].email}"
}

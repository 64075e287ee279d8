locals {
  labels = {
    service     = "outpost"
    environment = var.environment
  }
  runtime_member = "serviceAccount:${google_service_account.runtime.email}"
  invoker_member = "serviceAccount:${google_service_account.invoker.email}"
  # With hold-back, each check function learns the inhibitor's URI from this apply (the inhibitor depends on no
  # check, so nothing is circular); empty otherwise.
  inhibitor_url = { for uri in google_cloudfunctions2_function.inhibitor[*].service_config[0].uri : "OUTPOST_INHIBITOR_URL" => uri }
}

# The functions' own identity: it reads exactly the environment's secrets and, with gke auth, may authenticate
# to the cluster (what it may do there is Kubernetes RBAC's: `outpost rbac`).
resource "google_service_account" "runtime" {
  account_id   = var.runtime_account_id
  display_name = "Outpost ${var.environment} checks (runtime)"
  description  = "Identity of the Outpost ${var.environment} check functions."

  lifecycle {
    precondition {
      condition     = terraform.workspace == "default" || terraform.workspace == var.environment
      error_message = "The variables are for environment ${var.environment}; select its workspace (terraform workspace select ${var.environment})."
    }
  }
}

# The only caller: Cloud Scheduler signs each run's request with an OIDC token of this account.
resource "google_service_account" "invoker" {
  account_id   = var.invoker_account_id
  display_name = "Outpost ${var.environment} scheduler (invoker)"
  description  = "Cloud Scheduler calls the Outpost ${var.environment} check functions as this account."
}

resource "google_secret_manager_secret_iam_member" "runtime" {
  for_each  = toset(var.secrets)
  secret_id = each.value
  role      = "roles/secretmanager.secretAccessor"
  member    = local.runtime_member
}

resource "google_project_iam_member" "gke_cluster_viewer" {
  count   = var.gke_cluster_viewer ? 1 : 0
  project = var.project
  role    = "roles/container.clusterViewer"
  member  = local.runtime_member
}

# The source: private bucket, one immutable object per build (named by its SHA-256).
resource "google_storage_bucket" "source" {
  name                        = "${var.project}-outpost-${var.environment}-source"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true
  labels                      = local.labels
}

resource "google_storage_bucket_object" "source" {
  name   = "outpost-${var.environment}-${var.source_sha256}.zip"
  bucket = google_storage_bucket.source.name
  source = var.source_archive
}

resource "google_cloudfunctions2_function" "check" {
  for_each    = var.checks
  name        = each.value.function_name
  location    = var.region
  description = each.value.description
  labels      = merge(local.labels, { check = each.key })

  build_config {
    runtime     = var.runtime
    entry_point = var.entry_point
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    # One instance, one request at a time: a slow run makes the next one wait or fail, never overlap.
    max_instance_count               = 1
    min_instance_count               = 0
    max_instance_request_concurrency = 1
    available_memory                 = var.memory
    timeout_seconds                  = var.timeout_seconds
    service_account_email            = google_service_account.runtime.email
    # Cloud Scheduler is not internal traffic; every request still needs run.invoker (granted below, once).
    ingress_settings               = "ALLOW_ALL"
    all_traffic_on_latest_revision = true
    environment_variables = merge({
      OUTPOST_CONFIG = var.config_path
      OUTPOST_CHECK  = each.key
    }, local.inhibitor_url)
  }
}

# run.invoker on the function's Cloud Run service, for the invoker account only.
resource "google_cloud_run_service_iam_member" "invoker" {
  for_each = google_cloudfunctions2_function.check
  project  = var.project
  location = each.value.location
  service  = each.value.name
  role     = "roles/run.invoker"
  member   = local.invoker_member
}

resource "google_cloud_scheduler_job" "check" {
  for_each         = var.checks
  name             = each.value.function_name
  description      = "Runs ${each.value.description}"
  region           = var.region
  schedule         = each.value.schedule
  time_zone        = var.time_zone
  attempt_deadline = "${var.attempt_deadline_seconds}s"

  # A failed run is counted (and silences the heartbeat), never re-run.
  retry_config {
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = google_cloudfunctions2_function.check[each.key].service_config[0].uri
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = google_cloudfunctions2_function.check[each.key].service_config[0].uri
    }
  }

  depends_on = [google_cloud_run_service_iam_member.invoker]
}

# Hold-back and recurring maintenance windows (docs/contracts.md "Hold-back", "Recurring maintenance windows"): the
# inhibitor, the one identity that reads the Vigilmon API key. A failing parent's function POSTs "parent P is
# failing" to it with the runtime account's ID token; it opens the dependants' maintenance windows. With recurring
# windows, a Cloud Scheduler job ticks it every minute (as the invoker account) to open those that are due.
resource "google_service_account" "inhibitor" {
  count        = var.inhibitor == null ? 0 : 1
  account_id   = var.inhibitor.account_id
  display_name = "Outpost ${var.environment} inhibitor"
  description  = "Identity of the Outpost ${var.environment} inhibitor: the only one that reads the Vigilmon API key."
}

resource "google_secret_manager_secret_iam_member" "inhibitor" {
  for_each  = toset(var.inhibitor == null ? [] : var.inhibitor_secrets)
  secret_id = each.value
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.inhibitor[0].email}"
}

resource "google_cloudfunctions2_function" "inhibitor" {
  count       = var.inhibitor == null ? 0 : 1
  name        = var.inhibitor.function_name
  location    = var.region
  description = var.inhibitor.description
  labels      = merge(local.labels, { function = "inhibitor" })

  build_config {
    runtime     = var.runtime
    entry_point = var.inhibitor.entry_point
    source {
      storage_source {
        bucket = google_storage_bucket.source.name
        object = google_storage_bucket_object.source.name
      }
    }
  }

  service_config {
    # Several parents fail at once in an outage (each POSTs every run) while a tick may be opening windows: a few
    # instances, one request each, rather than requests refused for want of one (a refused hold is not held).
    max_instance_count    = 5
    min_instance_count    = 0
    available_memory      = var.memory
    timeout_seconds       = var.inhibitor.timeout_seconds
    service_account_email = google_service_account.inhibitor[0].email
    # The checks call it from their own functions, over its URI; every request needs run.invoker (below).
    ingress_settings               = "ALLOW_ALL"
    all_traffic_on_latest_revision = true
    environment_variables = {
      OUTPOST_CONFIG = var.config_path
    }
  }

  depends_on = [google_secret_manager_secret_iam_member.inhibitor]
}

# run.invoker on the inhibitor, for the checks' runtime account only.
resource "google_cloud_run_service_iam_member" "inhibitor" {
  count    = var.inhibitor == null ? 0 : 1
  project  = var.project
  location = google_cloudfunctions2_function.inhibitor[0].location
  service  = google_cloudfunctions2_function.inhibitor[0].name
  role     = "roles/run.invoker"
  member   = local.runtime_member
}

# With recurring maintenance windows: the tick, as the invoker account (the checks' caller), no retry (the next
# tick within the lookback opens what is left).
resource "google_cloud_run_service_iam_member" "inhibitor_tick" {
  count    = var.inhibitor == null ? 0 : (var.inhibitor.schedule == null ? 0 : 1)
  project  = var.project
  location = google_cloudfunctions2_function.inhibitor[0].location
  service  = google_cloudfunctions2_function.inhibitor[0].name
  role     = "roles/run.invoker"
  member   = local.invoker_member
}

resource "google_cloud_scheduler_job" "inhibitor" {
  count            = var.inhibitor == null ? 0 : (var.inhibitor.schedule == null ? 0 : 1)
  name             = var.inhibitor.function_name
  description      = "Opens the recurring maintenance windows of Outpost ${var.environment} that are due"
  region           = var.region
  schedule         = var.inhibitor.schedule
  time_zone        = "Etc/UTC"
  attempt_deadline = "${var.inhibitor.attempt_deadline_seconds}s"

  retry_config {
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = google_cloudfunctions2_function.inhibitor[0].service_config[0].uri
    body        = base64encode(var.inhibitor.tick_body)
    headers = {
      "Content-Type" = "application/json"
    }
    oidc_token {
      service_account_email = google_service_account.invoker.email
      audience              = google_cloudfunctions2_function.inhibitor[0].service_config[0].uri
    }
  }

  depends_on = [google_cloud_run_service_iam_member.inhibitor_tick]
}

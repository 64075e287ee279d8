# Every value comes from the environment file through `outpost package` (never edit the generated file: change
# infra/environments/ENV.yaml and package again, so what is deployed is what was validated).

variable "environment" {
  description = "Outpost environment name (infra/environments/<environment>.yaml)."
  type        = string
}

variable "project" {
  description = "Google Cloud project id the functions deploy into (deploy.project)."
  type        = string
}

variable "region" {
  description = "Region of the functions, their source bucket and the scheduler jobs (deploy.region)."
  type        = string
}

variable "source_archive" {
  description = "Path of the Cloud Functions source zip (main.py at its root), relative to infra/gcp."
  type        = string
}

variable "source_sha256" {
  description = "SHA-256 of the source zip: the object name, so a new build is a new object and a redeploy."
  type        = string
}

variable "runtime" {
  description = "Cloud Functions runtime (the Python the bundle's byte code was compiled for)."
  type        = string
}

variable "entry_point" {
  description = "The functions-framework target of the generated main.py; it serves the check named by OUTPOST_CHECK."
  type        = string
}

variable "config_path" {
  description = "OUTPOST_CONFIG: the environment file inside the source."
  type        = string
}

variable "timeout_seconds" {
  description = "Function timeout, derived from the environment file (deadline + heartbeat worst case + margin)."
  type        = number
}

variable "attempt_deadline_seconds" {
  description = "How long Cloud Scheduler waits for a run: the function timeout plus a margin."
  type        = number
}

variable "checks" {
  description = "One entry per enabled check: its function (and job) name, description and unix-cron schedule."
  type = map(object({
    function_name = string
    description   = string
    schedule      = string
  }))
}

variable "secrets" {
  description = "Secret Manager secrets (projects/P/secrets/S) the checks read (heartbeat URLs, cluster tokens; never the Vigilmon API key): the runtime account may read these and no other."
  type        = list(string)
}

variable "inhibitor_secrets" {
  description = "Secret Manager secrets the inhibitor reads: the Vigilmon API key's, with hold-back on; empty otherwise. The inhibitor account may read these and no other."
  type        = list(string)
  default     = []
}

variable "inhibitor" {
  description = "The inhibitor function (hold_back.enabled or maintenance_windows): the one identity holding the Vigilmon API key, called by the checks with their ID token and, with recurring windows, by a Cloud Scheduler job on `schedule` with `tick_body`; null when not deployed."
  type = object({
    function_name            = string
    description              = string
    entry_point              = string
    account_id               = string
    timeout_seconds          = number
    schedule                 = optional(string)
    attempt_deadline_seconds = number
    tick_body                = string
  })
  default = null
}

variable "runtime_account_id" {
  description = "Service account id of the functions' identity (secrets, cluster)."
  type        = string
}

variable "invoker_account_id" {
  description = "Service account id of the only identity allowed to call the functions (Cloud Scheduler's OIDC token)."
  type        = string
}

variable "gke_cluster_viewer" {
  description = "cluster.auth.mode is gke: the runtime account needs container.clusters.get to authenticate (its rights in the cluster come from Kubernetes RBAC)."
  type        = bool
}

variable "memory" {
  description = "Memory of each function instance."
  type        = string
  default     = "256M"
}

variable "time_zone" {
  description = "Time zone of the cron schedules."
  type        = string
  default     = "Etc/UTC"
}

variable "alarms" {
  description = "One alert policy per check and rule (outpost.tooling.alerting: failed, flapping, error, degraded): more than `threshold` runs of `status` within the last `window_seconds`, for `wait_seconds`; held back, also each `quiet` condition (every check of `checks` fewer than `runs` failed-or-error runs within `window_seconds`, for `duration_seconds`); `tier` page or notify."
  type = map(object({
    check          = string
    display_name   = string
    status         = string
    window_seconds = number
    threshold      = number
    wait_seconds   = number
    quiet = list(object({
      checks           = list(string)
      window_seconds   = number
      runs             = number
      duration_seconds = number
    }))
    tier         = string
    summary      = string
    runbook_path = string
    logs_query   = string
  }))
}

variable "page_notification_channels" {
  description = "Cloud Monitoring notification channels (projects/P/notificationChannels/ID) that page: the failed policy of critical checks. Empty: those policies notify nobody."
  type        = list(string)
  default     = []
}

variable "notify_notification_channels" {
  description = "Cloud Monitoring notification channels that notify: flapping, error, degraded, and failed of warning checks. Empty: those policies notify nobody."
  type        = list(string)
  default     = []
}

variable "runbook_base_url" {
  description = "Prefix of the runbook link in every policy's documentation, e.g. where the repository's files are browsed (https://.../blob/main/). Empty: the link is the path in the repository."
  type        = string
  default     = ""
}

variable "notifier" {
  description = "The notifier function (messages.enabled): on each alert policy's incident, read from the incidents topic, it reads the check's latest run line and publishes its summary and next steps to messages_topic; null when not deployed."
  type = object({
    function_name   = string
    description     = string
    entry_point     = string
    account_id      = string
    timeout_seconds = number
    incidents_topic = string
  })
  default = null
}

variable "messages_topic" {
  description = "Pub/Sub topic (projects/P/topics/T) the notifier publishes each alert's message to (messages.enabled, where it is required): its account may publish there and nowhere else."
  type        = string
  default     = ""

  validation {
    condition     = var.messages_topic == "" || can(regex("^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~+%-]{2,254}$", var.messages_topic))
    error_message = "messages_topic must be a Pub/Sub topic id, projects/PROJECT/topics/TOPIC."
  }
}

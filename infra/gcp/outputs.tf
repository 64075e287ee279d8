output "function_uris" {
  description = "Each check's function URI (callable by the invoker account only)."
  value       = { for name, function in google_cloudfunctions2_function.check : name => function.service_config[0].uri }
}

output "runtime_service_account" {
  description = "The identity to bind in the cluster (GKE: Kubernetes RBAC subject; `outpost rbac`)."
  value       = google_service_account.runtime.email
}

output "invoker_service_account" {
  description = "The only identity allowed to invoke the functions."
  value       = google_service_account.invoker.email
}

output "inhibitor_uri" {
  description = "The inhibitor function's URI (hold-back on; callable by the runtime account only), null otherwise. The check functions get it as OUTPOST_INHIBITOR_URL."
  value       = one(google_cloudfunctions2_function.inhibitor[*].service_config[0].uri)
}

output "inhibitor_service_account" {
  description = "The inhibitor's identity (hold-back on): the only one that reads the Vigilmon API key."
  value       = one(google_service_account.inhibitor[*].email)
}

output "notifier_service_account" {
  description = "The notifier's identity (messages on): reads the project's log entries, publishes to messages_topic."
  value       = one(google_service_account.notifier[*].email)
}

output "incidents_topic" {
  description = "The Pub/Sub topic the alert policies' incidents reach the notifier through (messages on), null otherwise."
  value       = one(google_pubsub_topic.incidents[*].id)
}

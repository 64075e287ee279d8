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

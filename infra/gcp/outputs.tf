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

# Outpost on Google Cloud: one Cloud Functions (2nd gen) function and one Cloud Scheduler job per enabled
# check of ONE environment, from the variables `outpost package --env ENV --platform gcp` writes
# (build/ENV/terraform.tfvars.json). One Terraform workspace (or state) per environment; the runtime service
# account refuses to be planned in a workspace named after another environment.
terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0, < 8.0"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}

"""`outpost package --env ENV`: the deployable build of one environment, or a refusal naming every bad field.

Packaging is the second place a bad configuration is refused (after `outpost validate`, before any cold
start): the environment file is fully validated first, `outpost.deploy`'s rules included, and an environment
without a `deploy` section (`local`) is refused: it runs locally only. Nothing is written for a refused file;
a build that fails halfway leaves no build at all (the stage's directory is emptied first), so a stale
bundle can never be mistaken for the current one.

Output, under `build/<env>/`:
- `deployment.json`: what serverless.yml deploys, read only through `infra/aws/verified-build.js`: the build
  record (SHA-256 of every input file, the environment file and the product's sources, and of the bundle)
  and, for AWS, the Serverless sections generated from the file: one function per enabled check (schedule,
  derived timeout, reserved concurrency 1, no retry, maximum event age, optional failure destination, IAM
  Function URL, `check` tag), the IAM statements (secret stores in the stage's scope, `kms:Decrypt` on a
  configured key, `sts:AssumeRole` on an EKS `role_arn`), each check's alarms on its run metrics
  (`outpost.tooling.alerting`; SNS topics by the `alarmTopicArn` and `notifyTopicArn` parameters) and the
  stack's tags;
- AWS: `outpost-<env>.zip`, the Lambda bundle: the product, its dependencies as wheels for the function's
  architecture, every enabled check's entry module, and the environment file at
  `infra/environments/<env>.yaml` (what `$OUTPOST_CONFIG` names at cold start);
- Cloud Functions (`--platform gcp`, or its older name `gcf`): `outpost-<env>-gcf.zip`, the product as
  source, the entry modules, the environment file, a root `main.py` whose `http` target serves the check
  named by `$OUTPOST_CHECK` (and one named target per enabled check), and `requirements.txt`, which Cloud
  Functions installs itself: the environment's subset of the Cloud Functions lock, every distribution pinned
  with `==` and the SHA-256 of its files (pip's hash-checking mode); and
  `terraform.tfvars.json`, the variables of `infra/gcp` (one function and one Cloud Scheduler job per enabled
  check, the derived timeout, the cron schedules, the Secret Manager secrets the file references, the service
  account ids, the alert policies), so Terraform deploys exactly what was validated and built.

Bundle guarantees:
- reproducible: the same lock and the same sources give the same bytes, whatever the building environment
  holds: the dependencies are installed from the target's lock in `infra/locks/` (`locks`: one per target, made
  by `make lock`), hashes required and nothing resolved (pip --require-hashes --no-deps), wheels
  only; entries sorted, fixed timestamps and modes, byte code compiled with hash-based invalidation (no mtime
  inside) and a fixed hash seed. A missing or stale lock (pyproject.toml changed since `make lock`) is refused;
- `.pyc` precompiled for the runtime's Python (3.11; another interpreter is refused) as unchecked-hash
  byte code: the bundle is immutable, so imports skip reading and hashing the sources;
- built in a fresh temporary directory from the sources themselves (never a setuptools `build/lib`);
- only the product and what the platform and the environment reach: the core dependencies, `aws` (boto3)
  for `ssm:`/`secretsmanager:` references or `eks` auth, `gcp` for `gcpsm:` or `gke`, `cloudfunctions` on
  Cloud Functions only, and the extras the enabled checks declare (`CheckSpec.extras`: `certificates`,
  cryptography, only when `apiserver-cert-expiry` or `webhook-cert-expiry` is enabled), exactly the lock's
  closure of the core and those extras (Lock.subset); never the sandbox,
  never console scripts (`bin/`) or install records naming this machine (`RECORD`, `direct_url.json`),
  never caches from the source tree;
- the architecture is checked: every ELF shared object must be built for the function's architecture and
  every wheel tag must name it (or none), so a bundle that would fail at import is refused here;
- its size, packed and unpacked, is printed; over Lambda's 250 MB unpacked it is refused.

Modules: `command` (the `outpost package` entry and the build's order), `platforms` (what runs where),
`locks` (reading and checking the committed locks), `bundle` (writing the zip), `records` (the build record),
`aws` (the Serverless sections) and `cloudfunctions` (Terraform variables, main.py, requirements.txt).
"""

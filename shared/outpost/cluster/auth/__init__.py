"""Turning a `ClusterAuth` setting into what an HTTPS client needs: server, trust, identity.

Guarantees:
- TLS verification is always on; a kubeconfig that asks for `insecure-skip-tls-verify` is refused, and
  so is a server that is not https:// (checked again by `Cluster`);
- every local file (kubeconfig, token file, CA file, client certificate and key) is read through
  `outpost.local_files`: a regular file within its kind's size limit, or a one-line refusal naming it (a FIFO,
  `/dev/zero` or a 150 MB token can neither hang nor grow the run). A CA bundle also holds at most
  `MAX_CA_CERTIFICATES` certificates (OpenSSL's loading is quadratic: 20,000 take 24 s), from a file or inline;
- kubeconfig YAML is loaded with its aliases' expansion bounded (`outpost.config.load_yaml`: an alias bomb in a
  token or in exec args would expand to gigabytes); a repeated key keeps the last value, as
  client-go's non-strict decoding does; token, args, env values and paths must be scalars, as client-go's types
  require;
- a server URL with user information (`https://user:password@host`) is refused naming the cluster entry and
  showing the URL without it: httpx would send it as Basic auth; the password is registered for redaction;
- kubeconfigs are read here, not by the kubernetes library: its loader waits for an exec plugin without a
  limit, logs the plugin's stderr to the root logger and crashes on some users. We read the file(s)
  ($KUBECONFIG merging included: first definition wins), and run an exec credential plugin ourselves in a
  session of its own, killing its whole process group when the run's deadline passes (never waiting for
  it); the ExecCredential contract is honoured: apiVersion, args, env, interactiveMode (there is no
  terminal: `Always` is refused), provideClusterInfo (KUBERNETES_EXEC_INFO). Its stdout is read as it comes,
  with a poll bounded by the deadline, and the group is killed as soon as it passes `EXEC_OUTPUT_LIMIT`; its
  stderr is drained and discarded (never buffered, never quoted: it may hold secrets); any exception kills the
  group too, and `outpost.interrupt` tracks the process for as long as it runs (a SIGINT/SIGTERM kills it);
- every credential obtained (static and file tokens, exec plugin tokens and keys, EKS and GKE tokens) is
  registered with `outpost.redaction` before it is used, so no output can print it;
- cloud token calls (STS, Google OAuth) get at most what is left of the deadline;
- everything that can go wrong while obtaining credentials is a `ClusterAuthError` naming the auth mode
  and the cause, never a provider's response body or a plugin's stderr, so the check reports `error`
  rather than a crash and nothing secret travels in the message.

Modules: `credentials` (what a client gets, the server context, the `token` mode), `kubeconfig`, `exec_plugin`
and `cloud` (EKS and GKE tokens); `build_credentials` below picks the mode.
"""

from __future__ import annotations

from outpost import local_files, redaction
from outpost.bounded import Deadline
from outpost.cluster.auth.cloud import eks_token_source, gke_token_source
from outpost.cluster.auth.credentials import DEFAULT_CREDENTIALS_SECONDS, Credentials, context_from_ca, from_token
from outpost.cluster.auth.kubeconfig import from_kubeconfig
from outpost.config import ClusterAuth, EksAuth, KubeconfigAuth, TokenAuth
from outpost.errors import ClusterAuthError, OutpostError

__all__ = ["build_credentials"]


def build_credentials(auth: ClusterAuth, deadline: Deadline | None = None) -> Credentials:
    budget = deadline or Deadline(DEFAULT_CREDENTIALS_SECONDS)
    try:
        if isinstance(auth, KubeconfigAuth):
            return from_kubeconfig(auth, budget)
        if isinstance(auth, TokenAuth):
            return from_token(auth, budget)
        if isinstance(auth, EksAuth):
            return Credentials(
                auth.server, context_from_ca(auth.mode, ca_data=auth.ca_data), eks_token_source(auth, budget)
            )
        return Credentials(
            auth.server, context_from_ca(auth.mode, ca_data=auth.ca_data), gke_token_source(auth, budget)
        )
    except local_files.LocalFileError as error:
        raise ClusterAuthError(f"{auth.mode} credentials: {error}") from None
    except OutpostError:
        raise
    except Exception as error:  # noqa: BLE001 - any loader failure means "cannot authenticate"
        raise ClusterAuthError(f"{auth.mode} credentials: {type(error).__name__}: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return redaction.redact(text[0][:200]) if text else "no detail"

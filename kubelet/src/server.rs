//! The kubelet API on `--port` (10250): `/pods`, `/healthz`, `/containerLogs`, `/exec`,
//! `/attach`, `/portForward`, `/run`, `/stats/summary`, `/metrics`, `/metrics/resource`;
//! authenticated (client certificates, TokenReview) and authorized (SubjectAccessReview); and
//! the read-only port. Owner: the server engineer.

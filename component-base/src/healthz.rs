//! `/healthz`, `/livez` and `/readyz` with named checks, as upstream's apiserver/healthz:
//! `ok` or a listing of `[+]name ok` / `[-]name failed: reason withheld`, `?verbose`,
//! `?exclude=name`, and `/<endpoint>/<check>` for one check.

use futures::future::BoxFuture;
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

type CheckFn = dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync;

/// A named health check.
#[derive(Clone)]
pub struct HealthCheck {
    name: String,
    check: Arc<CheckFn>,
}

impl HealthCheck {
    /// A check that runs `check` each time the endpoint is asked.
    pub fn new<F, Fut>(name: impl Into<String>, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        Self {
            name: name.into(),
            check: Arc::new(move || Box::pin(check())),
        }
    }

    /// The check every endpoint has: the process answers.
    pub fn ping() -> Self {
        Self::new("ping", || async { Ok(()) })
    }

    /// Fails once `flag` is set; readyz uses it so load balancers drain a stopping server.
    pub fn unless_set(name: impl Into<String>, flag: Arc<AtomicBool>) -> Self {
        Self::new(name, move || {
            let set = flag.load(Ordering::Relaxed);
            async move {
                if set {
                    Err("process is shutting down".into())
                } else {
                    Ok(())
                }
            }
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The answer of a health endpoint: HTTP status and plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthResponse {
    pub status: u16,
    pub body: String,
}

/// The checks of one endpoint (`healthz`, `livez` or `readyz`); cloning shares them.
#[derive(Clone)]
pub struct HealthEndpoint {
    name: &'static str,
    checks: Arc<RwLock<Vec<HealthCheck>>>,
}

impl HealthEndpoint {
    /// An endpoint with the `ping` check.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            checks: Arc::new(RwLock::new(vec![HealthCheck::ping()])),
        }
    }

    /// Adds a check; a check of the same name is replaced.
    pub fn add(&self, check: HealthCheck) {
        let mut checks = self.checks.write();
        checks.retain(|c| c.name != check.name);
        checks.push(check);
    }

    /// Serves `/<endpoint>` (`sub` None) or `/<endpoint>/<sub>` with the request's query string.
    pub async fn serve(&self, sub: Option<&str>, query: Option<&str>) -> HealthResponse {
        let checks = self.checks.read().clone();
        if let Some(sub) = sub.filter(|s| !s.is_empty()) {
            let Some(check) = checks.iter().find(|c| c.name == sub) else {
                return HealthResponse {
                    status: 404,
                    body: "404 page not found\n".into(),
                };
            };
            return match (check.check)().await {
                Ok(()) => HealthResponse {
                    status: 200,
                    body: "ok".into(),
                },
                Err(reason) => {
                    tracing::warn!(check = %check.name, endpoint = self.name, %reason, "health check failed");
                    HealthResponse {
                        status: 500,
                        body: "internal server error: reason withheld\n".into(),
                    }
                }
            };
        }

        let params = QueryParams::parse(query.unwrap_or(""));
        let unknown: Vec<&str> = params
            .exclude
            .iter()
            .map(String::as_str)
            .filter(|name| !checks.iter().any(|c| c.name == *name))
            .collect();

        let mut listing = String::new();
        let mut failed = false;
        for check in &checks {
            if params.exclude.contains(&check.name) {
                listing.push_str(&format!("[+]{} excluded: ok\n", check.name));
                continue;
            }
            match (check.check)().await {
                Ok(()) => listing.push_str(&format!("[+]{} ok\n", check.name)),
                Err(reason) => {
                    failed = true;
                    tracing::warn!(check = %check.name, endpoint = self.name, %reason, "health check failed");
                    listing.push_str(&format!("[-]{} failed: reason withheld\n", check.name));
                }
            }
        }
        if !unknown.is_empty() {
            listing.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                unknown
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        if failed {
            HealthResponse {
                status: 500,
                body: format!("{listing}{} check failed\n", self.name),
            }
        } else if params.verbose {
            HealthResponse {
                status: 200,
                body: format!("{listing}{} check passed\n", self.name),
            }
        } else {
            HealthResponse {
                status: 200,
                body: "ok".into(),
            }
        }
    }
}

/// The three endpoints of a component.
#[derive(Clone)]
pub struct Health {
    pub healthz: HealthEndpoint,
    pub livez: HealthEndpoint,
    pub readyz: HealthEndpoint,
    shutting_down: Arc<AtomicBool>,
}

impl Default for Health {
    fn default() -> Self {
        let shutting_down = Arc::new(AtomicBool::new(false));
        let readyz = HealthEndpoint::new("readyz");
        readyz.add(HealthCheck::unless_set("shutdown", shutting_down.clone()));
        Self {
            healthz: HealthEndpoint::new("healthz"),
            livez: HealthEndpoint::new("livez"),
            readyz,
            shutting_down,
        }
    }
}

impl Health {
    /// Adds a check to healthz, livez and readyz alike.
    pub fn add_everywhere(&self, check: HealthCheck) {
        self.healthz.add(check.clone());
        self.livez.add(check.clone());
        self.readyz.add(check);
    }

    /// Makes `/readyz` fail from now on, as a server does once it starts shutting down.
    pub fn mark_shutting_down(&self) {
        self.shutting_down.store(true, Ordering::Relaxed);
    }

    /// Routes a request path to its endpoint; `None` when the path is not a health path.
    pub async fn serve_path(&self, path: &str, query: Option<&str>) -> Option<HealthResponse> {
        let path = path.trim_start_matches('/');
        let (endpoint, sub) = match path.split_once('/') {
            Some((endpoint, sub)) => (endpoint, Some(sub)),
            None => (path, None),
        };
        let endpoint = match endpoint {
            "healthz" => &self.healthz,
            "livez" => &self.livez,
            "readyz" => &self.readyz,
            _ => return None,
        };
        Some(endpoint.serve(sub, query).await)
    }
}

struct QueryParams {
    verbose: bool,
    exclude: Vec<String>,
}

impl QueryParams {
    fn parse(query: &str) -> Self {
        let mut params = Self {
            verbose: false,
            exclude: Vec::new(),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                // Upstream treats the mere presence of `verbose` as true.
                "verbose" => params.verbose = value != "false" && value != "0",
                "exclude" if !value.is_empty() => params.exclude.push(value.to_string()),
                _ => {}
            }
        }
        params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(name: &str) -> HealthCheck {
        HealthCheck::new(name, || async { Err("disk on fire".to_string()) })
    }

    #[tokio::test]
    async fn healthy_endpoint_says_ok() {
        let health = Health::default();
        let got = health.serve_path("/healthz", None).await.unwrap();
        assert_eq!((got.status, got.body.as_str()), (200, "ok"));
    }

    #[tokio::test]
    async fn verbose_lists_checks() {
        let health = Health::default();
        health
            .readyz
            .add(HealthCheck::new("informers", || async { Ok(()) }));
        let got = health.serve_path("/readyz", Some("verbose")).await.unwrap();
        assert_eq!(got.status, 200);
        assert_eq!(
            got.body,
            "[+]ping ok\n[+]shutdown ok\n[+]informers ok\nreadyz check passed\n"
        );
    }

    #[tokio::test]
    async fn failure_withholds_reason_and_is_500() {
        let health = Health::default();
        health.healthz.add(failing("etcd"));
        let got = health.serve_path("/healthz", None).await.unwrap();
        assert_eq!(got.status, 500);
        assert_eq!(
            got.body,
            "[+]ping ok\n[-]etcd failed: reason withheld\nhealthz check failed\n"
        );
        assert!(!got.body.contains("disk on fire"));
    }

    #[tokio::test]
    async fn exclude_skips_a_failing_check() {
        let health = Health::default();
        health.livez.add(failing("etcd"));
        let got = health
            .serve_path("/livez", Some("exclude=etcd&exclude=nope&verbose"))
            .await
            .unwrap();
        assert_eq!(got.status, 200);
        assert!(got.body.contains("[+]etcd excluded: ok\n"), "{}", got.body);
        assert!(got.body.contains("no matches for \"nope\""), "{}", got.body);
    }

    #[tokio::test]
    async fn single_check_paths() {
        let health = Health::default();
        health.healthz.add(failing("etcd"));
        let ok = health.serve_path("/healthz/ping", None).await.unwrap();
        assert_eq!((ok.status, ok.body.as_str()), (200, "ok"));
        assert_eq!(
            health
                .serve_path("/healthz/etcd", None)
                .await
                .unwrap()
                .status,
            500
        );
        assert_eq!(
            health
                .serve_path("/healthz/none", None)
                .await
                .unwrap()
                .status,
            404
        );
        assert!(health.serve_path("/metrics", None).await.is_none());
    }

    #[tokio::test]
    async fn readyz_fails_when_shutting_down() {
        let health = Health::default();
        assert_eq!(
            health.serve_path("/readyz", None).await.unwrap().status,
            200
        );
        health.mark_shutting_down();
        assert_eq!(
            health.serve_path("/readyz", None).await.unwrap().status,
            500
        );
        assert_eq!(health.serve_path("/livez", None).await.unwrap().status, 200);
    }
}

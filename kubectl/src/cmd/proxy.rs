//! `kubectl proxy`: a local HTTP server relaying requests to the apiserver with the
//! kubeconfig's credentials, behind upstream's host/path/method filters.

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use bytes::Bytes;
use clap::Args;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use std::path::PathBuf;
use std::sync::Arc;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = UnsyncBoxBody<Bytes, BoxError>;

/// Flags of `kubectl proxy`.
#[derive(Debug, Clone, Args)]
pub struct ProxyArgs {
    /// The port on which to run the proxy. Set to 0 to pick a random port.
    #[arg(short = 'p', long, default_value_t = 8001, value_name = "int")]
    pub port: u16,
    /// The IP address on which to serve on.
    #[arg(long, default_value = "127.0.0.1", value_name = "string")]
    pub address: String,
    /// Prefix to serve the proxied API under.
    #[arg(long, default_value = "/", value_name = "string")]
    pub api_prefix: String,
    /// Also serve static files from the given directory under the specified prefix.
    #[arg(short = 'w', long, value_name = "string")]
    pub www: Option<PathBuf>,
    /// Prefix to serve static files under, if static file directory is specified.
    #[arg(short = 'P', long, default_value = "/static/", value_name = "string")]
    pub www_prefix: String,
    /// Regular expressions for hosts that the proxy should accept.
    #[arg(
        long,
        default_value = "^localhost$,^127\\.0\\.0\\.1$,^\\[::1\\]$",
        value_name = "string"
    )]
    pub accept_hosts: String,
    /// Regular expressions for paths that the proxy should accept.
    #[arg(long, default_value = "^.*", value_name = "string")]
    pub accept_paths: String,
    /// Regular expressions for paths that the proxy should reject.
    #[arg(
        long,
        default_value = "^/api/.*/pods/.*/exec,^/api/.*/pods/.*/attach",
        value_name = "string"
    )]
    pub reject_paths: String,
    /// Regular expressions for HTTP methods that the proxy should reject.
    #[arg(long, default_value = "^$", value_name = "string")]
    pub reject_methods: String,
    /// If true, disable request filtering in the proxy. This is dangerous.
    #[arg(long)]
    pub disable_filter: bool,
}

pub async fn run(global: &GlobalOptions, args: &ProxyArgs) -> anyhow::Result<()> {
    let factory = Arc::new(Factory::new(global).await?);
    let filter = Arc::new(Filter::new(args)?);
    let listener = tokio::net::TcpListener::bind((args.address.as_str(), args.port))
        .await
        .map_err(|e| anyhow::anyhow!("listen tcp {}:{}: {e}", args.address, args.port))?;
    let bound = listener.local_addr()?;
    println!("Starting to serve on {bound}");
    let settings = Arc::new(args.clone());
    loop {
        let (conn, _) = listener.accept().await?;
        let factory = factory.clone();
        let filter = filter.clone();
        let settings = settings.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let factory = factory.clone();
                let filter = filter.clone();
                let settings = settings.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(
                        handle(&factory, &filter, &settings, req).await,
                    )
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(conn), service)
                .await;
        });
    }
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(Bytes::from(body.to_owned()))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    // As Go's `http.Error` answers.
    let headers = resp.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        "x-content-type-options",
        http::HeaderValue::from_static("nosniff"),
    );
    resp
}

async fn handle(
    factory: &Factory,
    filter: &Filter,
    args: &ProxyArgs,
    req: Request<hyper::body::Incoming>,
) -> Response<Body> {
    let path = req.uri().path().to_owned();
    if let Some(dir) = &args.www
        && let Some(rest) = path.strip_prefix(args.www_prefix.as_str())
    {
        let file = dir.join(rest.trim_start_matches('/'));
        return match std::fs::read(&file) {
            Ok(bytes) => text(StatusCode::OK, &String::from_utf8_lossy(&bytes)),
            Err(_) => text(StatusCode::NOT_FOUND, "404 page not found\n"),
        };
    }
    let prefix = args.api_prefix.trim_end_matches('/');
    let Some(api_path) = path
        .strip_prefix(prefix)
        .filter(|p| p.starts_with('/') || p.is_empty())
    else {
        return text(StatusCode::NOT_FOUND, "404 page not found\n");
    };
    let host = req
        .headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !args.disable_filter && !filter.accepts(req.method().as_str(), api_path, &host) {
        return text(StatusCode::FORBIDDEN, "Forbidden\n");
    }
    let target = match req.uri().query() {
        Some(q) => format!("{api_path}?{q}"),
        None => api_path.to_owned(),
    };
    let target = if target.is_empty() {
        "/".to_owned()
    } else {
        target
    };
    let (parts, body) = req.into_parts();
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(err) => return text(StatusCode::BAD_REQUEST, &err.to_string()),
    };
    let mut out = Request::builder().method(parts.method).uri(target);
    for (name, value) in &parts.headers {
        if !matches!(
            name.as_str(),
            "host" | "authorization" | "connection" | "upgrade" | "content-length"
        ) {
            out = out.header(name, value);
        }
    }
    let Ok(request) = out.body(kube::client::Body::from(bytes)) else {
        return text(StatusCode::BAD_REQUEST, "bad request");
    };
    match factory.client().send(request).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            Response::from_parts(
                parts,
                body.map_err(|e| Box::new(e) as BoxError).boxed_unsync(),
            )
        }
        Err(err) => text(StatusCode::BAD_GATEWAY, &format!("Error: '{err}'")),
    }
}

/// Upstream's `FilterServer` rules, as comma-separated regular expressions.
struct Filter {
    accept_hosts: Vec<Pattern>,
    accept_paths: Vec<Pattern>,
    reject_paths: Vec<Pattern>,
    reject_methods: Vec<Pattern>,
}

impl Filter {
    fn new(args: &ProxyArgs) -> anyhow::Result<Filter> {
        let list = |s: &str| -> Vec<Pattern> {
            s.split(',')
                .filter(|p| !p.is_empty())
                .map(Pattern::parse)
                .collect()
        };
        Ok(Filter {
            accept_hosts: list(&args.accept_hosts),
            accept_paths: list(&args.accept_paths),
            reject_paths: list(&args.reject_paths),
            reject_methods: list(&args.reject_methods),
        })
    }

    fn accepts(&self, method: &str, path: &str, host: &str) -> bool {
        let host = strip_port(host);
        let any = |ps: &[Pattern], s: &str| ps.iter().any(|p| p.matches(s));
        any(&self.accept_hosts, host)
            && any(&self.accept_paths, path)
            && !any(&self.reject_paths, path)
            && !any(&self.reject_methods, method)
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map(|i| &host[..=i]).unwrap_or(host);
    }
    match host.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    }
}

/// The regular-expression subset upstream's default filters use: `^`/`$` anchors, `.*`,
/// and `\`-escaped literals. Anything else is matched literally.
#[derive(Debug)]
struct Pattern {
    start: bool,
    end: bool,
    /// Literal pieces separated by `.*`.
    pieces: Vec<String>,
}

impl Pattern {
    fn parse(text: &str) -> Pattern {
        let start = text.starts_with('^');
        let body = text.strip_prefix('^').unwrap_or(text);
        let end = body.ends_with('$') && !body.ends_with("\\$");
        let body = if end { &body[..body.len() - 1] } else { body };
        let mut pieces = vec![String::new()];
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let (Some(n), Some(p)) = (chars.next(), pieces.last_mut()) {
                        p.push(n);
                    }
                }
                '.' if chars.peek() == Some(&'*') => {
                    chars.next();
                    pieces.push(String::new());
                }
                c => {
                    if let Some(p) = pieces.last_mut() {
                        p.push(c);
                    }
                }
            }
        }
        Pattern { start, end, pieces }
    }

    fn matches(&self, s: &str) -> bool {
        let n = self.pieces.len();
        let mut pos = 0;
        for (i, piece) in self.pieces.iter().enumerate() {
            if i == 0 && self.start {
                if !s.starts_with(piece.as_str()) {
                    return false;
                }
                pos = piece.len();
                continue;
            }
            if i == n - 1 && self.end {
                return s.len() >= pos + piece.len() && s.ends_with(piece.as_str());
            }
            match s[pos..].find(piece.as_str()) {
                Some(at) => pos += at + piece.len(),
                None => return false,
            }
        }
        !self.end || pos == s.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_filters() {
        let filter = Filter {
            accept_hosts: ["^localhost$", "^127\\.0\\.0\\.1$", "^\\[::1\\]$"]
                .map(Pattern::parse)
                .into(),
            accept_paths: vec![Pattern::parse("^.*")],
            reject_paths: ["^/api/.*/pods/.*/exec", "^/api/.*/pods/.*/attach"]
                .map(Pattern::parse)
                .into(),
            reject_methods: vec![Pattern::parse("^$")],
        };
        let cases = [
            ("GET", "/api", "127.0.0.1:8001", true),
            ("GET", "/api", "localhost", true),
            ("GET", "/api", "[::1]:8001", true),
            ("GET", "/api", "evil.com", false),
            ("GET", "/api", "127.0.0.10", false),
            (
                "POST",
                "/api/v1/namespaces/d/pods/p/exec",
                "localhost",
                false,
            ),
            ("GET", "/api/v1/namespaces/d/pods/p/log", "localhost", true),
        ];
        for (method, path, host, want) in cases {
            assert_eq!(
                filter.accepts(method, path, host),
                want,
                "{method} {path} {host}"
            );
        }
    }
}

//! `kubectl port-forward`: local listeners whose connections each become a pair of SPDY
//! streams (`data`, `error`) of upstream's `portforward.k8s.io` protocol to the pod.

mod ports;

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use crate::remotecommand::{self, pods, spdy::Session};
use clap::Args;
use ports::PortPair;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Flags of `kubectl port-forward`.
#[derive(Debug, Clone, Args)]
pub struct PortForwardArgs {
    /// TYPE/NAME [options] [LOCAL_PORT:]REMOTE_PORT [...[LOCAL_PORT_N:]REMOTE_PORT_N]
    pub args: Vec<String>,
    /// Addresses to listen on (comma separated). Only accepts IP addresses or localhost as a
    /// value. When localhost is supplied, kubectl will try to bind on both 127.0.0.1 and ::1
    /// and will fail if neither of these addresses are available to bind.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "localhost",
        value_name = "strings"
    )]
    pub address: Vec<String>,
    /// The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at least one
    /// pod is running
    #[arg(long, value_name = "duration", default_value = "1m0s")]
    pub pod_running_timeout: String,
}

pub async fn run(global: &GlobalOptions, args: &PortForwardArgs) -> anyhow::Result<()> {
    let Some((target, specs)) = args.args.split_first().filter(|(_, p)| !p.is_empty()) else {
        anyhow::bail!(
            "TYPE/NAME and list of ports are required for port-forward\nSee 'kubectl port-forward -h' for help and examples"
        );
    };
    let addresses = addresses(&args.address)?;
    let factory = Factory::new(global).await?;
    let timeout = pods::running_timeout(&args.pod_running_timeout, "port-forward")?;
    let pod = pods::pod_for(&factory, target, timeout).await?;
    let is_service = target
        .split_once('/')
        .is_some_and(|(kind, _)| matches!(kind, "svc" | "service" | "services"));
    let pairs = if is_service {
        let name = target.split_once('/').map(|(_, n)| n).unwrap_or(target);
        let svc = factory
            .get(&format!(
                "/api/v1/namespaces/{}/services/{name}",
                factory.namespace()
            ))
            .await?;
        ports::for_service(specs, &svc, &pod)?
    } else {
        ports::for_pod(specs, &pod)?
    };
    let phase = pod["status"]["phase"].as_str().unwrap_or("");
    if phase != "Running" {
        anyhow::bail!("unable to forward port because pod is not running. Current status={phase}");
    }
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    let path = format!(
        "/api/v1/namespaces/{}/pods/{name}/portforward",
        factory.namespace()
    );
    let (session, _) = remotecommand::upgrade(&factory, &path, &["portforward.k8s.io"]).await?;
    let requests = Arc::new(AtomicU64::new(0));
    let mut listening = 0;
    for pair in &pairs {
        let mut local = pair.local;
        let mut errors = Vec::new();
        for ip in &addresses {
            match TcpListener::bind(SocketAddr::new(*ip, local)).await {
                Ok(listener) => {
                    let bound = listener.local_addr()?;
                    local = bound.port();
                    println!("Forwarding from {bound} -> {}", pair.remote);
                    listening += 1;
                    tokio::spawn(accept(
                        listener,
                        session.clone(),
                        pair.clone(),
                        requests.clone(),
                    ));
                }
                Err(err) => errors.push(format!("{ip}: {err}")),
            }
        }
        if errors.len() == addresses.len() {
            anyhow::bail!(
                "Unable to listen on port {}: Listeners failed to create with the following errors: [{}]",
                pair.local,
                errors.join(" ")
            );
        }
    }
    anyhow::ensure!(
        listening > 0,
        "unable to listen on any of the requested ports"
    );
    session.closed().await;
    anyhow::bail!("lost connection to pod")
}

fn addresses(flags: &[String]) -> anyhow::Result<Vec<IpAddr>> {
    let mut out = Vec::new();
    for a in flags {
        if a == "localhost" {
            out.push(IpAddr::from([127, 0, 0, 1]));
            out.push(IpAddr::from(std::net::Ipv6Addr::LOCALHOST));
        } else {
            let ip: IpAddr = a
                .parse()
                .map_err(|_| anyhow::anyhow!("{a} is not a valid IP"))?;
            out.push(ip);
        }
    }
    Ok(out)
}

async fn accept(listener: TcpListener, session: Session, pair: PortPair, requests: Arc<AtomicU64>) {
    let local = listener
        .local_addr()
        .map(|a| a.port())
        .unwrap_or(pair.local);
    while let Ok((conn, _)) = listener.accept().await {
        println!("Handling connection for {local}");
        let id = requests.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(forward(conn, session.clone(), pair.clone(), local, id));
    }
}

/// One local connection: its bytes to the pod's port and back; what the pod side reports on
/// the error stream goes to stderr, as upstream's handler logs it.
async fn forward(conn: TcpStream, session: Session, pair: PortPair, local: u16, id: u64) {
    let port = pair.remote.to_string();
    let request = id.to_string();
    let (error_id, mut error) = session.open(&[
        ("streamType", "error"),
        ("port", &port),
        ("requestID", &request),
    ]);
    let (data_id, mut data) = session.open(&[
        ("streamType", "data"),
        ("port", &port),
        ("requestID", &request),
    ]);
    let (mut rd, mut wr) = conn.into_split();
    let upstream = session.clone();
    let to_pod = tokio::spawn(async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if !upstream.write(data_id, &buf[..n]) {
                        return;
                    }
                }
            }
        }
        upstream.close(data_id);
    });
    let errors = tokio::spawn(async move {
        let mut text = Vec::new();
        while let Some(chunk) = error.recv().await {
            text.extend_from_slice(&chunk);
        }
        text
    });
    while let Some(chunk) = data.recv().await {
        if wr.write_all(&chunk).await.is_err() {
            break;
        }
    }
    let _ = wr.shutdown().await;
    to_pod.abort();
    session.reset(data_id);
    session.reset(error_id);
    if let Ok(text) = errors.await
        && !text.is_empty()
    {
        eprintln!(
            "E0000 portforward.go] \"Unhandled Error\" err=\"an error occurred forwarding {local} -> {}: error forwarding port {}: {}\"",
            pair.remote,
            pair.remote,
            String::from_utf8_lossy(&text).trim()
        );
    }
}

//! The run phase: bootstrap the client certificate, connect to the runtime, start node
//! status, the container manager, the pod sources, the kubelet's sync loop and its servers,
//! until a signal.

use super::config::Config;
use crate::cm::{CgroupOptions, ContainerManager};
use crate::config::{Sources, start as start_sources};
use crate::envvars::{ClientSource, ServiceLister};
use crate::images::{ImageGcManager, ImageGcPolicy};
use crate::kubelet::hooks::CgroupHost;
use crate::kubelet::{Deps, Kubelet, Settings};
use crate::kuberuntime::{RuntimeManager, RuntimeOptions, api_recorder};
use crate::nodestatus::{NodeOptions, NodeStatusManager};
use crate::pod::{MirrorClient, PodManager};
use crate::prober::ProbeManager;
use crate::server::KubeletHost;
use crate::status::StatusManager;
use crate::volumemanager::VolumeManager;
use anyhow::Context;
use client_go_rs::events::{EventBroadcaster, EventType, KubeCoreV1Sink};
use client_go_rs::informers::SharedInformerFactory;
use component_base::debug::DebugHandlers;
use component_base::healthz::HealthCheck;
use component_base::serving::serve;
use component_base::signals::shutdown_on_signals;
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use std::path::PathBuf;
use std::sync::Arc;

/// `10Mi`-style sizes of the configuration, in bytes (10 MiB when unparsable).
fn size_bytes(text: &str) -> u64 {
    api_types::resource::Quantity::parse(text)
        .map(|q| q.value())
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(10 << 20)
}

async fn client(config: &Config) -> anyhow::Result<kube::Client> {
    let kubeconfig = config
        .kubeconfig
        .as_deref()
        .context("--kubeconfig is required (standalone mode is not supported)")?;
    Ok(
        client_go_rs::config::load_client_config(Some(kubeconfig), None, None)
            .await?
            .with_rate_limit(
                config.kubelet.kube_api_qps as f32,
                config.kubelet.kube_api_burst as u32,
            )
            .with_user_agent(client_go_rs::config::default_user_agent(
                "kubelet",
                component_base::version::GIT_VERSION,
            ))
            .build_client()?,
    )
}

/// Runs the kubelet until SIGTERM or SIGINT.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let shutdown = shutdown_on_signals()?;
    let handlers = DebugHandlers::default();
    handlers
        .configz
        .set("kubeletconfig", config.configz()["kubeletconfig"].clone());
    let k = &config.kubelet;

    crate::certificate::bootstrap_client_certificate(&config).await?;
    let client = client(&config).await?;
    // Upstream's kubelet writes core/v1 events as component `kubelet` from its node.
    let broadcaster = EventBroadcaster::new(Arc::new(KubeCoreV1Sink::new(client.clone())));
    let recorder = broadcaster.new_recorder("kubelet", config.node_name.clone());
    // `--hollow` (a test mode): the runtime is an in-process fake instead of containerd.
    let hollow = match config.hollow {
        true => Some(
            crate::hollow::start_runtime(
                &config.root_dir.join("hollow").join("cri.sock"),
                &config.node_name,
                &config.root_dir,
                shutdown.clone(),
            )
            .await?,
        ),
        false => None,
    };
    let runtime = Arc::new(
        RuntimeManager::connect(RuntimeOptions {
            endpoint: hollow
                .clone()
                .unwrap_or_else(|| k.container_runtime_endpoint.clone()),
            image_endpoint: hollow
                .clone()
                .unwrap_or_else(|| config.image_service_endpoint().to_string()),
            request_timeout: k.runtime_request_timeout,
            pod_logs_dir: config.pod_logs_dir(),
            serialize_image_pulls: k.serialize_image_pulls,
            container_log_max_size: size_bytes(&k.container_log_max_size),
            container_log_max_files: k.container_log_max_files.max(1) as u32,
        })
        .await
        .context("connecting to the container runtime")?,
    );
    let cgroups: Arc<dyn CgroupHost> = match config.hollow {
        true => Arc::new(crate::kubelet::hooks::RuntimeCgroups {
            cgroup_root: k.cgroup_root.clone(),
        }),
        false => Arc::new(
            ContainerManager::start(CgroupOptions::from_config(&config))
                .context("starting the container manager")?,
        ),
    };
    let node = NodeStatusManager::start(
        client.clone(),
        NodeOptions::from_config(&config),
        runtime.clone(),
        shutdown.clone(),
    )?;
    runtime.set_event_recorder(api_recorder(recorder.clone()));
    runtime.set_container_gc_period(config.gc_periods.1);
    let images = Arc::new(ImageGcManager::new(
        runtime.clone(),
        ImageGcPolicy::from_config(k),
        &config.node_name,
        Some(recorder.clone()),
    )?);
    images.clone().start(config.gc_periods.0, shutdown.clone());
    let service_informer = SharedInformerFactory::new(client.clone(), None).informer::<Service>();
    tokio::spawn(service_informer.clone().run(shutdown.clone()));
    let status = Arc::new(StatusManager::default());
    let pods = Arc::new(PodManager::default());
    let probes = Arc::new(ProbeManager::new(runtime.clone(), status.clone()));
    probes.set_event_recorder(api_recorder(recorder.clone()));
    let volumes = Arc::new(VolumeManager::new(
        config.root_dir.clone(),
        Arc::new(ClientSource::new(client.clone())),
        config.node_name.clone(),
    ));
    volumes.set_cluster_domain(&k.cluster_domain);
    volumes.set_event_recorder(api_recorder(recorder.clone()));
    let settings = Settings {
        node_name: config.node_name.clone(),
        root_dir: config.root_dir.clone(),
        sync_frequency: k.sync_frequency,
        cluster_dns: config.cluster_dns.clone(),
        cluster_domain: k.cluster_domain.clone(),
        resolv_conf: (!k.resolv_conf.is_empty()).then(|| PathBuf::from(&k.resolv_conf)),
    };
    let kubelet = Kubelet::new(
        settings,
        Deps {
            client: client.clone(),
            runtime: runtime.clone(),
            status,
            pods,
            probes,
            node: Arc::new(node.clone()),
            volumes: match config.hollow {
                true => Arc::new(crate::kubelet::hooks::NoVolumes),
                false => volumes,
            },
            cgroups,
            mirror: MirrorClient::new(client.clone(), config.node_name.clone()),
            services: ServiceLister::new(service_informer),
        },
    );

    // A hollow node's pods use nothing: the host's pressure is not theirs to relieve.
    if !config.hollow {
        crate::eviction::EvictionManager::new(
            crate::eviction::EvictionOptions::from_config(&config)?,
            kubelet.clone(),
            Arc::new(node.clone()),
            Some(images.clone()),
        )
        .with_recorder(recorder.clone(), &config.node_name)
        .start(shutdown.clone());
    }
    let pleg = kubelet.pleg.clone();
    handlers
        .health
        .add_everywhere(HealthCheck::new("pleg", move || {
            let result = pleg.healthy();
            async move { result }
        }));
    let headers: Vec<(String, String)> = k
        .static_pod_url_header
        .iter()
        .flat_map(|(name, values)| values.iter().map(move |v| (name.clone(), v.clone())))
        .collect();
    let (updates, ready) = start_sources(
        Sources {
            node_name: config.node_name.clone(),
            apiserver: Some((client.clone(), config.node_name.clone())),
            static_pod_path: config.static_pod_path(),
            file_check_frequency: k.file_check_frequency,
            manifest_url: (!k.static_pod_url.is_empty())
                .then(|| (k.static_pod_url.clone(), headers)),
            http_check_frequency: k.http_check_frequency,
        },
        shutdown.clone(),
    );
    tokio::spawn(kubelet.clone().run(updates, ready, shutdown.clone()));

    let mut servers = crate::server::start(
        &config,
        Arc::new(KubeletHost::new(kubelet.clone())),
        handlers.clone(),
        Some(client.clone()),
        shutdown.clone(),
    )
    .await?;
    if let Some(addr) = config.healthz_addr {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("failed to listen on --healthz-port {addr}"))?;
        servers.push(serve(
            listener,
            None,
            handlers.clone().service(),
            shutdown.clone(),
        )?);
    }
    tracing::info!(
        node = %config.node_name,
        version = component_base::version::GIT_VERSION,
        "kubelet started"
    );
    // Upstream's birth cry: the node's reference uses its name as uid.
    let node_ref = ObjectReference {
        kind: Some("Node".into()),
        name: Some(config.node_name.clone()),
        uid: Some(config.node_name.clone()),
        ..Default::default()
    };
    recorder.event(
        &node_ref,
        EventType::Normal,
        "Starting",
        "Starting kubelet.",
    );
    shutdown.cancelled().await;
    handlers.health.mark_shutting_down();
    for server in servers {
        server.wait().await;
    }
    Ok(())
}

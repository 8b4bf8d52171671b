//! The command line of the kubelet, with upstream's flag names.
//!
//! Flags that have a KubeletConfiguration field are `Option`s: unset means "take the value of
//! the `--config` file (or the default)", so a flag given on the command line wins over the file
//! as upstream.

use super::config::Config;
use clap::{Args, Parser};
use component_base::cli::{CommonFlags, ComponentOptions};
use component_base::duration::GoDuration;
use std::net::IpAddr;
use std::path::PathBuf;

/// The kubelet's flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kubelet",
    disable_help_flag = true,
    disable_version_flag = true,
    // pflag semantics: a flag given twice takes its last value.
    args_override_self = true,
    about = "The kubelet is the primary \"node agent\" that runs on each node.",
    long_about = "The kubelet is the primary \"node agent\" that runs on each node. It registers \
the node with the apiserver and runs the pods bound to it through the container runtime."
)]
pub struct Options {
    #[command(flatten)]
    pub kubelet: KubeletFlags,
    #[command(flatten)]
    pub file: ConfigFlags,
    #[command(flatten)]
    pub serving: ServingFlags,
    #[command(flatten)]
    pub common: CommonFlags,
}

/// Where the kubelet keeps its state and how it reaches the apiserver (no config-file field).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Kubelet flags")]
pub struct KubeletFlags {
    /// The Kubelet will load its initial configuration from this file (a KubeletConfiguration,
    /// kubelet.config.k8s.io/v1beta1). Command-line flags override configuration from this file.
    #[arg(long, value_name = "string")]
    pub config: Option<PathBuf>,

    /// Path to a kubeconfig file, specifying how to connect to the API server.
    #[arg(long, value_name = "string")]
    pub kubeconfig: Option<PathBuf>,

    /// Path to a kubeconfig file that will be used to get a client certificate for kubelet. If
    /// the file specified by --kubeconfig does not exist, the bootstrap kubeconfig is used to
    /// request a client certificate from the API server.
    #[arg(long, value_name = "string")]
    pub bootstrap_kubeconfig: Option<PathBuf>,

    /// If non-empty, will use this string as identification instead of the actual hostname.
    #[arg(long, value_name = "string")]
    pub hostname_override: Option<String>,

    /// Directory path for managing kubelet files (volume mounts, etc).
    #[arg(long, value_name = "string", default_value = "/var/lib/kubelet")]
    pub root_dir: PathBuf,

    /// IP address (or comma-separated dual-stack IP addresses) of the node. If unset, kubelet
    /// will use the node's default IPv4 address, if any.
    #[arg(long, value_name = "string")]
    pub node_ip: Option<String>,

    /// Labels to add when registering the node in the cluster (key=value pairs, comma
    /// separated).
    #[arg(long, value_name = "key=value", value_delimiter = ',')]
    pub node_labels: Vec<String>,

    /// Specified image will not be pruned by the image garbage collector. DEPRECATED: the
    /// sandbox image is the container runtime's setting.
    #[arg(long, value_name = "string")]
    pub pod_infra_container_image: Option<String>,

    /// Testing only, not upstream's (its periods are fixed): how often image GC runs
    /// (default 5m) and container GC runs (default 1m).
    #[arg(long, value_name = "duration", hide = true)]
    pub testing_image_gc_period: Option<GoDuration>,
    #[arg(long, value_name = "duration", hide = true)]
    pub testing_container_gc_period: Option<GoDuration>,

    /// TEST MODE, never for real nodes (as upstream's kubemark hollow node): run no
    /// containers. The node registers and heartbeats and its pods are reported Running, through
    /// an in-process fake container runtime; cgroups and volumes are left alone.
    #[arg(long)]
    pub hollow: bool,
}

/// Flags with a KubeletConfiguration field: they override the `--config` file.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Kubelet configuration flags")]
pub struct ConfigFlags {
    /// The endpoint of remote runtime service (default unix:///run/containerd/containerd.sock).
    #[arg(long, value_name = "string")]
    pub container_runtime_endpoint: Option<String>,

    /// The endpoint of remote image service; defaults to --container-runtime-endpoint.
    #[arg(long, value_name = "string")]
    pub image_service_endpoint: Option<String>,

    /// Path to the directory containing static pod files to run, or the path to a single
    /// static pod file.
    #[arg(long, value_name = "string")]
    pub pod_manifest_path: Option<String>,

    /// URL for accessing additional Pod specifications to run.
    #[arg(long, value_name = "string")]
    pub manifest_url: Option<String>,

    /// Comma-separated list of HTTP headers (key:value) to use when accessing --manifest-url;
    /// repeatable.
    #[arg(long, value_name = "key:value", value_delimiter = ',')]
    pub manifest_url_header: Option<Vec<String>>,

    /// Register the node with the apiserver (default true).
    #[arg(long, value_name = "bool", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub register_node: Option<bool>,

    /// Register the node with the given list of taints (comma separated
    /// "<key>=<value>:<effect>").
    #[arg(long, value_name = "key=value:effect", value_delimiter = ',')]
    pub register_with_taints: Option<Vec<String>>,

    /// Driver that the kubelet uses to manipulate cgroups on the host; only "cgroupfs" here.
    #[arg(long, value_name = "string")]
    pub cgroup_driver: Option<String>,

    /// Optional root cgroup to use for pods (default: the container runtime's root, "/").
    #[arg(long, value_name = "string")]
    pub cgroup_root: Option<String>,

    /// Enable creation of QoS cgroup hierarchy (default true).
    #[arg(long, value_name = "bool", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub cgroups_per_qos: Option<bool>,

    /// Number of Pods that can run on this Kubelet (default 110).
    #[arg(long, value_name = "int32")]
    pub max_pods: Option<i32>,

    /// Set the maximum number of processes per pod (-1: the node's limit).
    #[arg(long, value_name = "int")]
    pub pod_max_pids: Option<i64>,

    /// Comma-separated list of DNS server IP addresses.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub cluster_dns: Option<Vec<String>>,

    /// Domain for this cluster; containers search it in addition to the host's domains.
    #[arg(long, value_name = "string")]
    pub cluster_domain: Option<String>,

    /// Resolver configuration file used as the basis for the container DNS resolution.
    #[arg(long, value_name = "string")]
    pub resolv_conf: Option<String>,

    /// Makes the Kubelet fail to start if swap is enabled on the node (default true).
    #[arg(long, value_name = "bool", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub fail_swap_on: Option<bool>,

    /// Timeout of all runtime requests except long running ones (default 2m0s).
    #[arg(long, value_name = "duration")]
    pub runtime_request_timeout: Option<GoDuration>,

    /// How often the kubelet posts node status to the master (default 10s).
    #[arg(long, value_name = "duration")]
    pub node_status_update_frequency: Option<GoDuration>,

    /// Max period between synchronizing running containers and config (default 1m0s).
    #[arg(long, value_name = "duration")]
    pub sync_frequency: Option<GoDuration>,

    /// Duration between checking config files for new data (default 20s).
    #[arg(long, value_name = "duration")]
    pub file_check_frequency: Option<GoDuration>,

    /// Duration between checking http for new data (default 20s).
    #[arg(long, value_name = "duration")]
    pub http_check_frequency: Option<GoDuration>,

    /// A set of eviction thresholds (e.g. memory.available<1Gi) that trigger a pod eviction.
    #[arg(long, value_name = "mapStringString")]
    pub eviction_hard: Option<String>,

    /// Resources reserved for kubernetes system components (e.g. cpu=200m,memory=500Mi).
    #[arg(long, value_name = "mapStringString")]
    pub kube_reserved: Option<String>,

    /// Resources reserved for non-kubernetes components (e.g. cpu=200m,memory=500Mi).
    #[arg(long, value_name = "mapStringString")]
    pub system_reserved: Option<String>,

    /// Unique identifier of the node in the machine database (cloud provider).
    #[arg(long, value_name = "string")]
    pub provider_id: Option<String>,

    /// Maximum size of a container log file before it is rotated (default 10Mi).
    #[arg(long, value_name = "string")]
    pub container_log_max_size: Option<String>,

    /// Maximum number of container log files that can be present for a container (default 5).
    #[arg(long, value_name = "int32")]
    pub container_log_max_files: Option<i32>,

    /// Pull images one at a time (default true).
    #[arg(long, value_name = "bool", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub serialize_image_pulls: Option<bool>,

    /// The percent of disk usage after which image garbage collection is always run (default
    /// 85).
    #[arg(long, value_name = "int32")]
    pub image_gc_high_threshold: Option<i32>,

    /// The percent of disk usage before which image garbage collection is never run (default
    /// 80).
    #[arg(long, value_name = "int32")]
    pub image_gc_low_threshold: Option<i32>,

    /// The port for the Kubelet to serve on with no authentication/authorization (0: disable).
    #[arg(long, value_name = "int32")]
    pub read_only_port: Option<u16>,
}

/// The kubelet's own serving flags (it does not use the control plane's `--secure-port`).
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Serving flags")]
pub struct ServingFlags {
    /// The IP address for the Kubelet to serve on (default 0.0.0.0).
    #[arg(long, value_name = "ip")]
    pub address: Option<IpAddr>,

    /// The port for the Kubelet to serve on (default 10250).
    #[arg(long, value_name = "int32")]
    pub port: Option<u16>,

    /// The directory where the TLS certs are located. If --tls-cert-file and
    /// --tls-private-key-file are provided, this flag will be ignored.
    #[arg(long, value_name = "string", default_value = "/var/lib/kubelet/pki")]
    pub cert_dir: PathBuf,

    /// File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any,
    /// concatenated after server cert).
    #[arg(long, value_name = "string")]
    pub tls_cert_file: Option<PathBuf>,

    /// File containing x509 private key matching --tls-cert-file.
    #[arg(long, value_name = "string")]
    pub tls_private_key_file: Option<PathBuf>,

    /// The IP address for the healthz server to serve on (default 127.0.0.1).
    #[arg(long, value_name = "ip")]
    pub healthz_bind_address: Option<IpAddr>,

    /// The port of the localhost healthz endpoint, 0 to disable (default 10248).
    #[arg(long, value_name = "int32")]
    pub healthz_port: Option<u16>,
}

impl ComponentOptions for Options {
    type Config = Config;

    fn common(&self) -> &CommonFlags {
        &self.common
    }
}

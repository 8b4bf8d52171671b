//! DNS for pods: the sandbox's resolv.conf settings from dnsPolicy, dnsConfig and
//! `--cluster-dns`/`--cluster-domain`, and the pod's `/etc/hosts`. Owner: the volumes engineer.

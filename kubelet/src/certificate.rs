//! `--bootstrap-kubeconfig`: a client certificate requested through a
//! CertificateSigningRequest (`kubernetes.io/kube-apiserver-client-kubelet`) and written as the
//! `--kubeconfig`. Owner: the node engineer.

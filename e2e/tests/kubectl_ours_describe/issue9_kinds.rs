//! Issue 9's describers for Ingress (service backends looked up with their EndpointSlices,
//! resource backends, TLS, the load balancer's addresses), NetworkPolicy, HPA (autoscaling/v2,
//! every metric source, behavior, conditions), StorageClass and CSR (the subject decoded from
//! the request): ours against upstream's on the same objects, compared as the other cases are.

use super::{NODE, check, events_yaml};
use e2e::kubectl_compare::Fixture;

const NAMESPACED: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: ing-svc}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, name: http}, {port: 443, targetPort: 8443, name: https}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ing-svc-a, labels: {kubernetes.io/service-name: ing-svc}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}, {name: https, port: 8443, protocol: TCP}]
endpoints:
- {addresses: [10.244.0.7], conditions: {ready: true}}
- {addresses: [10.244.0.8], conditions: {ready: true}}
- {addresses: [10.244.0.9], conditions: {ready: false}}
- {addresses: [10.244.0.10]}
- {addresses: [10.244.0.11], conditions: {ready: true}}
---
apiVersion: v1
kind: Service
metadata: {name: bare-svc}
spec:
  ports: [{port: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-full, labels: {app: web}, annotations: {nginx.ingress.kubernetes.io/rewrite-target: /}}
spec:
  ingressClassName: nginx
  defaultBackend: {service: {name: ing-svc, port: {number: 80}}}
  tls:
  - {hosts: [a.example.com, b.example.com], secretName: tls-a}
  - {hosts: [c.example.com]}
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /api, pathType: Prefix, backend: {service: {name: ing-svc, port: {name: https}}}}
      - {path: /missing, pathType: Exact, backend: {service: {name: nosvc, port: {number: 8080}}}}
      - {path: /static, pathType: ImplementationSpecific, backend: {resource: {apiGroup: k8s.example.com, kind: StorageBucket, name: assets}}}
  - http:
      paths:
      - {path: /, pathType: Prefix, backend: {resource: {kind: ConfigMap, name: cfg}}}
  - host: nohttp.example.com
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-min}
spec:
  rules:
  - host: x.example.com
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-def}
spec:
  defaultBackend: {resource: {apiGroup: example.com, kind: Bucket, name: b}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-bare, annotations: {a: b}}
spec:
  ingressClassName: nginx
  rules:
  - host: bare.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: bare-svc, port: {number: 8080}}}}
      - {path: /x, pathType: Prefix, backend: {service: {name: ing-svc, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-full, labels: {a: b}}
spec:
  podSelector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [front]}]}
  policyTypes: [Ingress, Egress]
  ingress:
  - from:
    - ipBlock: {cidr: 172.17.0.0/16, except: [172.17.1.0/24, 172.17.2.0/24]}
    - namespaceSelector: {matchLabels: {project: p}}
      podSelector: {matchLabels: {role: fe}}
    - podSelector: {matchLabels: {role: x}}
    - namespaceSelector: {}
    ports:
    - {protocol: TCP, port: 6379}
    - {port: 32000, endPort: 32768}
    - {protocol: UDP, port: dns}
  - {}
  egress:
  - to: [{ipBlock: {cidr: 10.0.0.0/24}}, {namespaceSelector: {matchExpressions: [{key: env, operator: NotIn, values: [dev]}]}}]
    ports: [{protocol: TCP, port: 5978}]
  - ports: [{protocol: SCTP}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-deny}
spec:
  podSelector: {}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-egress, annotations: {why: lockdown}}
spec:
  podSelector: {matchLabels: {app: db}}
  policyTypes: [Egress]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-ingress}
spec:
  podSelector: {}
  policyTypes: [Ingress]
  ingress: [{from: [{podSelector: {}}], ports: [{port: 80}]}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-full, annotations: {a: b}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}
  - {type: Resource, resource: {name: memory, target: {type: AverageValue, averageValue: 500Mi}}}
  - {type: Pods, pods: {metric: {name: packets-per-second}, target: {type: AverageValue, averageValue: 1k}}}
  - {type: Object, object: {metric: {name: requests-per-second}, describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main-route}, target: {type: Value, value: 10k}}}
  - {type: Object, object: {metric: {name: rps}, describedObject: {apiVersion: v1, kind: Service, name: s}, target: {type: AverageValue, averageValue: 100m}}}
  - {type: External, external: {metric: {name: queue_messages, selector: {matchLabels: {queue: worker}}}, target: {type: AverageValue, averageValue: "30"}}}
  - {type: External, external: {metric: {name: queue_len}, target: {type: Value, value: "5"}}}
  - {type: ContainerResource, containerResource: {name: cpu, container: app, target: {type: Utilization, averageUtilization: 60}}}
  - {type: ContainerResource, containerResource: {name: memory, container: app, target: {type: AverageValue, averageValue: 1Gi}}}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      selectPolicy: Max
      policies: [{type: Percent, value: 100, periodSeconds: 15}, {type: Pods, value: 4, periodSeconds: 15}]
    scaleDown:
      stabilizationWindowSeconds: 300
      policies: [{type: Percent, value: 10, periodSeconds: 60}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-min}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
  maxReplicas: 3
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-up-only}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]
  behavior: {scaleUp: {selectPolicy: Disabled}}
"#;

const HPA_STATUS: &str = r#"{"status":{"currentReplicas":3,"desiredReplicas":4,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":55,"averageValue":"110m"}}},{"type":"Resource","resource":{"name":"memory","current":{"averageValue":"300Mi"}}},{"type":"Pods","pods":{"metric":{"name":"packets-per-second"},"current":{"averageValue":"1500m"}}},{"type":"Object","object":{"metric":{"name":"requests-per-second"},"describedObject":{"kind":"Ingress","name":"main-route"},"current":{"value":"2k"}}}],"conditions":[{"type":"AbleToScale","status":"True","reason":"ReadyForNewScale","message":"recommended size matches current size","lastTransitionTime":"2026-01-02T03:00:00Z"},{"type":"ScalingActive","status":"False","reason":"FailedGetResourceMetric","message":"the HPA was unable to compute the replica count","lastTransitionTime":"2026-01-02T03:00:00Z"}]}}"#;

const INGRESS_STATUS: &str = r#"{"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.9"},{"hostname":"lb.example.com"},{"ip":"10.0.0.1"},{"ip":"10.0.0.9"}]}}}"#;

const STORAGE_CLASSES: &str = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: h3-fast, annotations: {storageclass.kubernetes.io/is-default-class: "true", note: x}, labels: {a: b}}
provisioner: kubernetes.io/no-provisioner
parameters: {type: pd-ssd, replication-type: none}
reclaimPolicy: Retain
allowVolumeExpansion: true
mountOptions: [debug, noatime]
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [us-a, us-b]}
  - {key: disk, values: [ssd]}
- matchLabelExpressions:
  - {key: rack, values: [r1]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: h3-slow}
provisioner: example.com/slow
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: h3-beta, annotations: {storageclass.beta.kubernetes.io/is-default-class: "true"}}
provisioner: example.com/beta
reclaimPolicy: Delete
allowVolumeExpansion: false
volumeBindingMode: Immediate
allowedTopologies: []
"#;

/// A PEM certificate request with a full subject and every kind of alternative name.
fn full_request() -> String {
    use rcgen::{DnType, SanType};
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params =
        rcgen::CertificateParams::new(vec!["a.example.com".to_owned(), "10.0.0.1".to_owned()])
            .expect("params");
    params.subject_alt_names.extend([
        SanType::DnsName("b.example.com".try_into().expect("dns")),
        SanType::IpAddress("fd00::1".parse().expect("ip")),
        SanType::Rfc822Name("me@example.com".try_into().expect("email")),
        SanType::URI("spiffe://x/y".try_into().expect("uri")),
    ]);
    let dn = &mut params.distinguished_name;
    *dn = rcgen::DistinguishedName::new();
    dn.push(DnType::CommonName, "system:node:n1");
    dn.push(DnType::OrganizationName, "system:nodes");
    dn.push(DnType::OrganizationalUnitName, "u1");
    dn.push(DnType::CountryName, "US");
    dn.push(DnType::LocalityName, "Town");
    dn.push(DnType::StateOrProvinceName, "State");
    // serialNumber, streetAddress, postalCode: rcgen names none of them.
    dn.push(DnType::CustomDnType(vec![2, 5, 4, 5]), "1234");
    dn.push(DnType::CustomDnType(vec![2, 5, 4, 9]), "Main St");
    dn.push(DnType::CustomDnType(vec![2, 5, 4, 17]), "999");
    request_pem(&params, &key)
}

/// A request with only a common name.
fn plain_request(cn: &str) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    request_pem(&params, &key)
}

fn request_pem(params: &rcgen::CertificateParams, key: &rcgen::KeyPair) -> String {
    params
        .serialize_request(key)
        .expect("csr")
        .pem()
        .expect("pem")
}

fn b64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn csr_yaml(name: &str, meta: &str, request: &str, signer: &str, extra: &str) -> String {
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}{meta}}}\nspec:\n  request: {}\n  signerName: {signer}\n  usages: [client auth]\n{extra}---\n",
        b64(request)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn network_autoscaling_storage_and_csr_describers_match_upstream() {
    let Fixture { cluster, cmp } = Fixture::start("describe9").await;
    let dir = cluster.dir().to_path_buf();
    let kubectl = &cmp.upstream;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let namespaced = write("namespaced.yaml", NAMESPACED);
    for ns in [&cmp.ns_upstream, &cmp.ns_ours] {
        kubectl.ok(&["create", "-f", &namespaced, "-n", ns]);
        for (kind, name, status) in [
            ("hpa", "hpa-full", HPA_STATUS),
            ("ingress", "ing-bare", INGRESS_STATUS),
        ] {
            kubectl.ok(&[
                "patch",
                kind,
                name,
                "-n",
                ns,
                "--subresource=status",
                "--type=merge",
                "-p",
                status,
            ]);
        }
        for (kind, full, name) in [
            ("HorizontalPodAutoscaler", "hpa", "hpa-full"),
            ("Ingress", "ingress", "ing-full"),
        ] {
            let uid = kubectl.ok(&[
                "get",
                full,
                name,
                "-n",
                ns,
                "-o",
                "jsonpath={.metadata.uid}",
            ]);
            let events = events_yaml(ns, name, kind, name, &uid);
            kubectl.ok(&[
                "create",
                "-f",
                &write(&format!("ev-{ns}-{name}.yaml"), &events),
            ]);
        }
    }
    for args in [
        vec!["describe", "ingress", "ing-full"],
        vec!["describe", "ing", "ing-min"],
        vec!["describe", "ingress.networking.k8s.io/ing-def"],
        vec!["describe", "ing", "ing-bare", "--show-events=false"],
        vec!["describe", "ingresses"],
        vec!["describe", "netpol", "np-full"],
        vec!["describe", "networkpolicies"],
        vec!["describe", "hpa", "hpa-full"],
        vec!["describe", "hpa", "hpa-min"],
        vec!["describe", "hpa.v1.autoscaling", "hpa-up-only"],
        vec!["describe", "horizontalpodautoscalers"],
    ] {
        check(&cmp, &args, true);
    }

    let full = full_request();
    let csrs = [
        csr_yaml(
            "csr-full",
            ", labels: {a: b}, annotations: {x: z}",
            &full,
            "kubernetes.io/kube-apiserver-client",
            "  expirationSeconds: 86400\n",
        ),
        csr_yaml(
            "csr-denied",
            "",
            &plain_request("plain"),
            "example.com/custom",
            "",
        ),
        csr_yaml(
            "csr-pending",
            "",
            &plain_request(NODE),
            "example.com/custom",
            "",
        ),
    ]
    .concat();
    kubectl.ok(&["create", "-f", &write("csrs.yaml", &csrs)]);
    kubectl.ok(&["create", "-f", &write("classes.yaml", STORAGE_CLASSES)]);
    kubectl.ok(&["certificate", "approve", "csr-full"]);
    kubectl.ok(&["certificate", "deny", "csr-denied"]);
    // Issued: any PEM certificate will do, the describer only tests that one is there.
    let issued = rcgen::CertificateParams::new(vec!["x".to_owned()])
        .expect("params")
        .self_signed(&rcgen::KeyPair::generate().expect("key"))
        .expect("certificate")
        .pem();
    let patch = format!(
        r#"[{{"op":"add","path":"/status/certificate","value":"{}"}}]"#,
        b64(&issued)
    );
    let failed = r#"[{"op":"add","path":"/status/conditions/-","value":{"type":"Failed","status":"True","reason":"SignerValidationFailure","message":"m"}}]"#;
    for (name, patch) in [("csr-full", patch.as_str()), ("csr-denied", failed)] {
        kubectl.ok(&[
            "patch",
            "csr",
            name,
            "--subresource=status",
            "--type=json",
            "-p",
            patch,
        ]);
    }
    for args in [
        vec!["describe", "csr", "csr-full"],
        vec!["describe", "csr", "csr-denied"],
        vec!["describe", "certificatesigningrequests"],
        vec!["describe", "sc", "h3-fast"],
        vec!["describe", "storageclass", "h3-slow"],
        vec!["describe", "storageclasses"],
        vec!["describe", "sc", "h3-", "--show-events=false"],
    ] {
        check(&cmp, &args, false);
    }
}

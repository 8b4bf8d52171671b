//! Service validation.

use std::collections::BTreeSet;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::meta::{
    name_is_dns1035_label, validate_labels, validate_object_meta, validate_object_meta_update,
};
use super::names::{is_dns1123_label, is_dns1123_subdomain, is_valid_port_name, is_valid_port_num};
use super::{BadValue, ErrorList, FieldError, FieldPath};

const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// Validates a Service on create.
pub fn validate_service(svc: &Service) -> ErrorList {
    let mut errs = validate_object_meta(
        &svc.metadata,
        true,
        name_is_dns1035_label,
        &FieldPath::new("metadata"),
    );
    let path = FieldPath::new("spec");
    let Some(spec) = &svc.spec else {
        errs.push(FieldError::required(&path.child("ports"), ""));
        return errs;
    };
    let ty = spec.type_.as_deref().unwrap_or("ClusterIP");
    if !SERVICE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            ty,
            &SERVICE_TYPES,
        ));
    }
    let cluster_ip = spec.cluster_ip.as_deref().unwrap_or("");
    let headless = cluster_ip == "None";
    let ports = spec.ports.as_deref().unwrap_or_default();
    if ty == "ExternalName" {
        let name = spec.external_name.as_deref().unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(&path.child("externalName"), ""));
        } else {
            for msg in is_dns1123_subdomain(name.strip_suffix('.').unwrap_or(name)) {
                errs.push(FieldError::invalid(&path.child("externalName"), name, msg));
            }
        }
    } else if ports.is_empty() && !headless {
        errs.push(FieldError::required(&path.child("ports"), ""));
    }
    if !cluster_ip.is_empty() && !headless && cluster_ip.parse::<IpAddr>().is_err() {
        errs.push(FieldError::invalid(
            &path.child("clusterIPs").index(0),
            cluster_ip,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ));
    }
    let mut names = BTreeSet::new();
    let mut port_keys = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let pp = path.child("ports").index(i);
        match p.name.as_deref().filter(|n| !n.is_empty()) {
            None if ports.len() > 1 => errs.push(FieldError::required(&pp.child("name"), "")),
            None => {}
            Some(name) => {
                for msg in is_dns1123_label(name) {
                    errs.push(FieldError::invalid(&pp.child("name"), name, msg));
                }
                if !names.insert(name.to_string()) {
                    errs.push(FieldError::duplicate(&pp.child("name"), name));
                }
            }
        }
        for msg in is_valid_port_num(p.port) {
            errs.push(FieldError::invalid(&pp.child("port"), p.port, msg));
        }
        let protocol = p.protocol.as_deref().unwrap_or("TCP");
        if !PROTOCOLS.contains(&protocol) {
            errs.push(FieldError::not_supported(
                &pp.child("protocol"),
                protocol,
                &PROTOCOLS,
            ));
        }
        if !port_keys.insert((p.port, protocol.to_string())) {
            errs.push(FieldError::duplicate(
                &pp,
                BadValue::json(&serde_json::json!({"port": p.port, "protocol": protocol})),
            ));
        }
        match &p.target_port {
            Some(IntOrString::Int(t)) => {
                for msg in is_valid_port_num(*t) {
                    errs.push(FieldError::invalid(&pp.child("targetPort"), *t, msg));
                }
            }
            Some(IntOrString::String(t)) if !t.is_empty() => {
                for msg in is_valid_port_name(t) {
                    errs.push(FieldError::invalid(&pp.child("targetPort"), t, msg));
                }
            }
            _ => {}
        }
        if let Some(np) = p.node_port.filter(|n| *n != 0) {
            if ty == "ClusterIP" {
                errs.push(FieldError::forbidden(
                    &pp.child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            } else {
                for msg in is_valid_port_num(np) {
                    errs.push(FieldError::invalid(&pp.child("nodePort"), np, msg));
                }
            }
        }
    }
    if let Some(a) = spec.session_affinity.as_deref().filter(|a| !a.is_empty())
        && a != "ClientIP"
        && a != "None"
    {
        errs.push(FieldError::not_supported(
            &path.child("sessionAffinity"),
            a,
            &["ClientIP", "None"],
        ));
    }
    if let Some(sel) = &spec.selector {
        errs.append(validate_labels(sel, &path.child("selector")));
    }
    errs
}

/// Validates a Service update: metadata rules, the new spec, and a set cluster IP that may not
/// change.
pub fn validate_service_update(new: &Service, old: &Service) -> ErrorList {
    let mut errs =
        validate_object_meta_update(&new.metadata, &old.metadata, &FieldPath::new("metadata"));
    errs.append(validate_service(new).without_meta_create_only());
    let primary = |s: &Service| -> (String, Vec<String>) {
        let spec = s.spec.as_ref();
        let ips = spec.and_then(|s| s.cluster_ips.clone()).unwrap_or_default();
        let ip = spec
            .and_then(|s| s.cluster_ip.clone())
            .or_else(|| ips.first().cloned())
            .unwrap_or_default();
        let ips = if ips.is_empty() && !ip.is_empty() {
            vec![ip.clone()]
        } else {
            ips
        };
        (ip, ips)
    };
    let (old_ip, _) = primary(old);
    let (new_ip, new_ips) = primary(new);
    let new_type = new
        .spec
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("ClusterIP");
    if !old_ip.is_empty() && new_type != "ExternalName" && new_ip != old_ip {
        errs.push(FieldError::invalid(
            &FieldPath::new("spec").child("clusterIPs").index(0),
            BadValue::string_list(&new_ips),
            "may not change once set",
        ));
    }
    errs
}

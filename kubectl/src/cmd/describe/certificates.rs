//! `describeCertificateSigningRequest`: who asked, the signer, the status folded from the
//! conditions, and the subject and alternative names decoded from the PEM request.

use super::core::format_labels;
use super::events;
use super::writer::{PrefixWriter, arr, human_duration, obj, rfc1123z, s};
use base64::Engine;
use serde_json::Value;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509CertificationRequest};

/// What upstream shows of a request (Go's `x509.CertificateRequest` fields).
#[derive(Debug, Default, PartialEq)]
struct Request {
    common_name: String,
    serial_number: String,
    /// Title and values, in upstream's order (Organization, ..., PostalCode).
    subject: Vec<(&'static str, Vec<String>)>,
    dns: Vec<String>,
    emails: Vec<String>,
    uris: Vec<String>,
    ips: Vec<String>,
}

/// The subject attributes listed after the serial number, by OID, in upstream's order.
const LISTED: [(&str, &str); 7] = [
    ("2.5.4.10", "Organization"),
    ("2.5.4.11", "Organizational Unit"),
    ("2.5.4.6", "Country"),
    ("2.5.4.7", "Locality"),
    ("2.5.4.8", "Province"),
    ("2.5.4.9", "StreetAddress"),
    ("2.5.4.17", "PostalCode"),
];

/// `certificate.ParseCSR`: the first PEM block must be a CERTIFICATE REQUEST.
fn parse(pem_bytes: &[u8]) -> anyhow::Result<Request> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_bytes)
        .map_err(|_| anyhow::anyhow!("PEM block type must be CERTIFICATE REQUEST"))?;
    anyhow::ensure!(
        pem.label == "CERTIFICATE REQUEST",
        "PEM block type must be CERTIFICATE REQUEST"
    );
    let (_, csr) = X509CertificationRequest::from_der(&pem.contents)
        .map_err(|err| anyhow::anyhow!("x509: {err}"))?;
    let mut req = Request {
        subject: LISTED.iter().map(|(_, t)| (*t, Vec::new())).collect(),
        ..Request::default()
    };
    for rdn in csr.certification_request_info.subject.iter_rdn() {
        for attr in rdn.iter() {
            let Ok(value) = attr.as_str() else { continue };
            let oid = attr.attr_type().to_id_string();
            match oid.as_str() {
                // Go keeps the last common name and serial number it meets.
                "2.5.4.3" => req.common_name = value.to_owned(),
                "2.5.4.5" => req.serial_number = value.to_owned(),
                _ => {
                    if let Some(i) = LISTED.iter().position(|(o, _)| *o == oid) {
                        req.subject[i].1.push(value.to_owned());
                    }
                }
            }
        }
    }
    for ext in csr.requested_extensions().into_iter().flatten() {
        let ParsedExtension::SubjectAlternativeName(san) = ext else {
            continue;
        };
        for name in &san.general_names {
            match name {
                GeneralName::DNSName(d) => req.dns.push((*d).to_owned()),
                GeneralName::RFC822Name(e) => req.emails.push((*e).to_owned()),
                GeneralName::URI(u) => req.uris.push((*u).to_owned()),
                GeneralName::IPAddress(ip) => req.ips.push(ip_string(ip)),
                _ => {}
            }
        }
    }
    Ok(req)
}

/// Go's `net.IP.String()`: IPv4 dotted (also when mapped into IPv6), IPv6 compressed.
fn ip_string(bytes: &[u8]) -> String {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        return std::net::Ipv4Addr::from(v4).to_string();
    }
    if let Ok(v6) = <[u8; 16]>::try_from(bytes) {
        let addr = std::net::Ipv6Addr::from(v6);
        return match addr.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => addr.to_string(),
        };
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("?{hex}")
}

/// `extractCSRStatus`: Denied over Approved over Pending, then Failed and Issued.
fn status(csr: &Value) -> String {
    let types: Vec<&str> = arr(csr, "/status/conditions")
        .iter()
        .map(|c| s(c, "/type"))
        .collect();
    let mut text = if types.contains(&"Denied") {
        "Denied"
    } else if types.contains(&"Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if types.contains(&"Failed") {
        text.push_str(",Failed");
    }
    if !s(csr, "/status/certificate").is_empty() {
        text.push_str(",Issued");
    }
    text
}

/// `describeCertificateSigningRequest`; a request that does not parse is an error, as
/// upstream's `Error parsing CSR`.
pub fn describe(csr: &Value, events: Option<&[Value]>) -> anyhow::Result<String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(s(csr, "/spec/request"))
        .unwrap_or_default();
    let req = parse(&pem).map_err(|err| anyhow::anyhow!("Error parsing CSR: {err:#}"))?;
    let mut w = PrefixWriter::default();
    w.write(0, &format!("Name:\t{}\n", s(csr, "/metadata/name")));
    w.write(
        0,
        &format!("Labels:\t{}\n", format_labels(obj(csr, "/metadata/labels"))),
    );
    w.write(
        0,
        &format!(
            "Annotations:\t{}\n",
            format_labels(obj(csr, "/metadata/annotations"))
        ),
    );
    w.write(
        0,
        &format!(
            "CreationTimestamp:\t{}\n",
            rfc1123z(s(csr, "/metadata/creationTimestamp"))
        ),
    );
    w.write(
        0,
        &format!("Requesting User:\t{}\n", s(csr, "/spec/username")),
    );
    let signer = s(csr, "/spec/signerName");
    if !signer.is_empty() {
        w.write(0, &format!("Signer:\t{signer}\n"));
    }
    if let Some(secs) = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
    {
        w.write(
            0,
            &format!("Requested Duration:\t{}\n", human_duration(secs)),
        );
    }
    w.write(0, &format!("Status:\t{}\n", status(csr)));
    w.write(0, "Subject:\n");
    w.write(0, &format!("\tCommon Name:\t{}\n", req.common_name));
    w.write(0, &format!("\tSerial Number:\t{}\n", req.serial_number));
    for (title, values) in &req.subject {
        list(&mut w, title, values);
    }
    if req.dns.len() + req.emails.len() + req.ips.len() + req.uris.len() > 0 {
        w.write(0, "Subject Alternative Names:\n");
        list(&mut w, "DNS Names", &req.dns);
        list(&mut w, "Email Addresses", &req.emails);
        list(&mut w, "URIs", &req.uris);
        list(&mut w, "IP Addresses", &req.ips);
    }
    if let Some(events) = events {
        events::describe(&mut w, events);
    }
    Ok(w.finish())
}

/// Upstream's `printListHelper` with a tab prefix: nothing when empty, one value a line.
fn list(w: &mut PrefixWriter, title: &str, values: &[String]) {
    if values.is_empty() {
        return;
    }
    w.write(0, &format!("\t{title}:\t{}\n", values.join("\n\t\t")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_ips() {
        let csr = |conditions: &[&str], cert: &str| {
            let c: Vec<Value> = conditions
                .iter()
                .map(|t| serde_json::json!({"type": t}))
                .collect();
            serde_json::json!({"status": {"conditions": c, "certificate": cert}})
        };
        assert_eq!(status(&csr(&[], "")), "Pending");
        assert_eq!(status(&csr(&["Approved"], "x")), "Approved,Issued");
        assert_eq!(
            status(&csr(&["Approved", "Denied", "Failed"], "")),
            "Denied,Failed"
        );
        assert_eq!(ip_string(&[10, 0, 0, 1]), "10.0.0.1");
        let mut mapped = [0u8; 16];
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped[12..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(ip_string(&mapped), "1.2.3.4");
        assert!(parse(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").is_err());
    }
}

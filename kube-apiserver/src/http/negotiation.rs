//! Content negotiation, as upstream's `endpoints/handlers/negotiation`: which encoding and which
//! object conversion (Table, PartialObjectMetadata, aggregated discovery) a response takes from
//! the request's `Accept` header, and which decoder or patch type a request body's
//! `Content-Type` selects.

use crate::http::status::ApiError;

/// JSON.
pub const MEDIA_JSON: &str = "application/json";
/// YAML.
pub const MEDIA_YAML: &str = "application/yaml";
/// Kubernetes protobuf: accepted as a request body (see [`crate::http::protobuf`]); in Accept
/// headers understood but never produced (responses fall back to JSON).
pub const MEDIA_PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// JSON patch (RFC 6902).
pub const MEDIA_JSON_PATCH: &str = "application/json-patch+json";
/// JSON merge patch (RFC 7386).
pub const MEDIA_MERGE_PATCH: &str = "application/merge-patch+json";
/// Strategic merge patch.
pub const MEDIA_STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
/// Server-side apply.
pub const MEDIA_APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The media types responses can be encoded in, in order of preference.
pub const OUTPUT_MEDIA_TYPES: &[&str] = &[MEDIA_JSON, MEDIA_YAML];
/// The media types request bodies of create and update can be in, in upstream's order (the
/// 415 message lists them).
pub const INPUT_MEDIA_TYPES: &[&str] = &[MEDIA_JSON, MEDIA_YAML, MEDIA_PROTOBUF];
/// The patch types PATCH accepts.
pub const PATCH_MEDIA_TYPES: &[&str] = &[
    MEDIA_JSON_PATCH,
    MEDIA_MERGE_PATCH,
    MEDIA_STRATEGIC_MERGE_PATCH,
    MEDIA_APPLY_PATCH,
];

/// The group of the meta types responses can be converted to (`Table`, ...).
pub const META_GROUP: &str = "meta.k8s.io";
/// The group of the aggregated discovery types.
pub const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";

/// How a response body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
}

impl Encoding {
    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Encoding::Json => MEDIA_JSON,
            Encoding::Yaml => MEDIA_YAML,
        }
    }
}

/// What the object in a response is converted to before encoding (the `as`, `g`, `v`
/// parameters of the Accept header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// The object itself.
    None,
    /// A `meta.k8s.io` Table in `version` (`v1` or `v1beta1`): what `kubectl get` prints.
    Table {
        /// `v1` or `v1beta1`.
        version: &'static str,
    },
    /// `PartialObjectMetadata` (a single object's metadata).
    PartialObjectMetadata {
        /// `v1` or `v1beta1`.
        version: &'static str,
    },
    /// `PartialObjectMetadataList` (the metadata of every listed object).
    PartialObjectMetadataList {
        /// `v1` or `v1beta1`.
        version: &'static str,
    },
    /// An `apidiscovery.k8s.io` `APIGroupDiscoveryList` in `version` (`v2` or `v2beta1`).
    AggregatedDiscovery {
        /// `v2` or `v2beta1`.
        version: &'static str,
    },
}

/// The conversions an endpoint can produce (upstream's `EndpointRestrictions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EndpointRestrictions {
    /// Tables (`get` and `list` of resources with a table convertor: all of ours).
    pub table: bool,
    /// `PartialObjectMetadata` and `PartialObjectMetadataList`.
    pub partial_metadata: bool,
    /// Aggregated discovery (`/api` and `/apis` only).
    pub aggregated_discovery: bool,
}

impl EndpointRestrictions {
    /// What resource endpoints (get, list, watch of objects) allow: Table and metadata.
    pub const RESOURCE: EndpointRestrictions = EndpointRestrictions {
        table: true,
        partial_metadata: true,
        aggregated_discovery: false,
    };
    /// What the discovery roots allow: aggregated discovery.
    pub const DISCOVERY: EndpointRestrictions = EndpointRestrictions {
        table: false,
        partial_metadata: false,
        aggregated_discovery: true,
    };
    /// Plain objects only (subresources, Status responses, ...).
    pub const NONE: EndpointRestrictions = EndpointRestrictions {
        table: false,
        partial_metadata: false,
        aggregated_discovery: false,
    };
}

/// The outcome of negotiating a response's media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaType {
    /// The encoding of the body.
    pub encoding: Encoding,
    /// The conversion to apply to the object.
    pub conversion: Conversion,
    /// Whether the client asked for indented output (`pretty=1`).
    pub pretty: bool,
}

impl MediaType {
    /// Plain JSON, what a request without Accept header gets.
    pub const JSON: MediaType = MediaType {
        encoding: Encoding::Json,
        conversion: Conversion::None,
        pretty: false,
    };

    /// The response's `Content-Type`: aggregated discovery names its type in parameters as
    /// upstream does (client-go checks them); everything else is the bare media type.
    pub fn content_type(&self) -> String {
        match self.conversion {
            Conversion::AggregatedDiscovery { version } => format!(
                "{};g={DISCOVERY_GROUP};v={version};as=APIGroupDiscoveryList",
                self.encoding.media_type()
            ),
            _ => self.encoding.media_type().to_string(),
        }
    }
}

/// One entry of an Accept header.
#[derive(Debug, Clone, PartialEq)]
struct AcceptClause {
    type_: String,
    subtype: String,
    q: f64,
    params: Vec<(String, String)>,
}

impl AcceptClause {
    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses an Accept header into clauses sorted by preference: quality first, then concrete
/// types before wildcards, keeping the client's order otherwise (as goautoneg).
fn parse_accept(header: &str) -> Vec<AcceptClause> {
    let mut clauses: Vec<AcceptClause> = header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let range = pieces.next()?.trim();
            if range.is_empty() {
                return None;
            }
            let (type_, subtype) = match range.split_once('/') {
                Some((t, s)) => (t.trim().to_ascii_lowercase(), s.trim().to_ascii_lowercase()),
                None if range == "*" => ("*".to_string(), "*".to_string()),
                None => (range.to_ascii_lowercase(), String::new()),
            };
            let mut q = 1.0;
            let mut params = Vec::new();
            for p in pieces {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"'));
                if k == "q" {
                    q = v.parse::<f64>().unwrap_or(0.0);
                } else if !k.is_empty() {
                    params.push((k, v.to_string()));
                }
            }
            Some(AcceptClause {
                type_,
                subtype,
                q,
                params,
            })
        })
        .collect();
    let specificity = |c: &AcceptClause| u8::from(c.type_ != "*") + u8::from(c.subtype != "*");
    clauses.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| specificity(b).cmp(&specificity(a)))
    });
    clauses
}

/// Chooses the response's media type from the `Accept` header for an endpoint that allows
/// `endpoint`'s conversions, as upstream's `NegotiateOutputMediaType`: the first clause (in
/// preference order) that names a type we produce, with a conversion the endpoint allows,
/// wins. Protobuf clauses are skipped, so `protobuf, json` falls back to JSON. No header
/// means JSON; nothing acceptable is a 406.
pub fn negotiate_output(
    accept: Option<&str>,
    endpoint: EndpointRestrictions,
) -> Result<MediaType, ApiError> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() {
        return Ok(MediaType::JSON);
    }
    for clause in parse_accept(header) {
        if clause.q <= 0.0 {
            continue;
        }
        for &candidate in OUTPUT_MEDIA_TYPES {
            let (ty, sub) = candidate.split_once('/').unwrap_or((candidate, ""));
            let type_ok = clause.type_ == "*" || clause.type_ == ty;
            let sub_ok = clause.subtype == "*" || clause.subtype == sub;
            if !(type_ok && sub_ok) {
                continue;
            }
            let encoding = if candidate == MEDIA_YAML {
                Encoding::Yaml
            } else {
                Encoding::Json
            };
            if let Some(conversion) = accepted_conversion(&clause, encoding, endpoint) {
                return Ok(MediaType {
                    encoding,
                    conversion,
                    pretty: clause.param("pretty") == Some("1"),
                });
            }
        }
    }
    Err(ApiError::not_acceptable(OUTPUT_MEDIA_TYPES))
}

/// The conversion the clause's `as`/`g`/`v` ask for, if the endpoint can produce it (upstream's
/// `AllowsConversion`); `None` rejects the clause.
fn accepted_conversion(
    clause: &AcceptClause,
    encoding: Encoding,
    endpoint: EndpointRestrictions,
) -> Option<Conversion> {
    let (kind, group, version) = (
        clause.param("as"),
        clause.param("g").unwrap_or(""),
        clause.param("v").unwrap_or(""),
    );
    if kind.is_none() && clause.param("g").is_none() && clause.param("v").is_none() {
        return Some(Conversion::None);
    }
    let kind = kind.unwrap_or("");
    let meta_version = match (group, version) {
        (META_GROUP, "v1") => Some("v1"),
        (META_GROUP, "v1beta1") => Some("v1beta1"),
        _ => None,
    };
    match kind {
        // Tables are rendered as JSON or YAML only, as upstream.
        "Table" if endpoint.table => meta_version.map(|version| Conversion::Table { version }),
        "PartialObjectMetadata" if endpoint.partial_metadata => {
            meta_version.map(|version| Conversion::PartialObjectMetadata { version })
        }
        "PartialObjectMetadataList" if endpoint.partial_metadata => {
            meta_version.map(|version| Conversion::PartialObjectMetadataList { version })
        }
        "APIGroupDiscoveryList"
            if endpoint.aggregated_discovery
                && group == DISCOVERY_GROUP
                && encoding == Encoding::Json =>
        {
            match version {
                "v2" => Some(Conversion::AggregatedDiscovery { version: "v2" }),
                "v2beta1" => Some(Conversion::AggregatedDiscovery { version: "v2beta1" }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The bare media type of a `Content-Type` header: lower-cased, parameters (`charset`) dropped.
fn bare_media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// How a create or update body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf (`k8s\0` + `runtime.Unknown`), what typed client-go clients send.
    Protobuf,
}

/// The decoder for a create or update body from its `Content-Type` (JSON when absent, as
/// upstream); anything else is a 415.
pub fn negotiate_input(content_type: Option<&str>) -> Result<InputFormat, ApiError> {
    let media = content_type.map(bare_media_type).unwrap_or_default();
    match media.as_str() {
        "" | MEDIA_JSON => Ok(InputFormat::Json),
        MEDIA_YAML => Ok(InputFormat::Yaml),
        MEDIA_PROTOBUF => Ok(InputFormat::Protobuf),
        _ => Err(ApiError::unsupported_media_type(INPUT_MEDIA_TYPES)),
    }
}

/// The kind of a PATCH body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            PatchType::Json => MEDIA_JSON_PATCH,
            PatchType::Merge => MEDIA_MERGE_PATCH,
            PatchType::StrategicMerge => MEDIA_STRATEGIC_MERGE_PATCH,
            PatchType::Apply => MEDIA_APPLY_PATCH,
        }
    }

    /// How the body of this patch type is decoded (apply bodies are YAML, a superset of JSON).
    pub fn input_format(self) -> InputFormat {
        match self {
            PatchType::Apply => InputFormat::Yaml,
            _ => InputFormat::Json,
        }
    }
}

/// The patch type of a PATCH from its `Content-Type`; a missing or other type is a 415.
pub fn negotiate_patch(content_type: Option<&str>) -> Result<PatchType, ApiError> {
    let media = content_type.map(bare_media_type).unwrap_or_default();
    match media.as_str() {
        MEDIA_JSON_PATCH => Ok(PatchType::Json),
        MEDIA_MERGE_PATCH => Ok(PatchType::Merge),
        MEDIA_STRATEGIC_MERGE_PATCH => Ok(PatchType::StrategicMerge),
        MEDIA_APPLY_PATCH => Ok(PatchType::Apply),
        _ => Err(ApiError::unsupported_media_type(PATCH_MEDIA_TYPES)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What kubectl 1.33 sends for `kubectl get` (and `kubectl get -w`).
    const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    /// What client-go's discovery client sends for `/api` and `/apis`.
    const KUBECTL_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    /// client-go's default for typed clients and watches.
    const CLIENT_GO_DEFAULT: &str = "application/json, */*";

    fn neg(accept: &str, endpoint: EndpointRestrictions) -> Result<MediaType, u16> {
        negotiate_output(Some(accept), endpoint).map_err(|e| e.code().as_u16())
    }

    fn plain(encoding: Encoding) -> MediaType {
        MediaType {
            encoding,
            conversion: Conversion::None,
            pretty: false,
        }
    }

    fn conv(conversion: Conversion) -> MediaType {
        MediaType {
            encoding: Encoding::Json,
            conversion,
            pretty: false,
        }
    }

    #[test]
    fn output_negotiation() {
        use EndpointRestrictions as E;
        let table_v1 = conv(Conversion::Table { version: "v1" });
        let cases: Vec<(&str, EndpointRestrictions, Result<MediaType, u16>)> = vec![
            ("", E::RESOURCE, Ok(plain(Encoding::Json))),
            ("application/json", E::RESOURCE, Ok(plain(Encoding::Json))),
            ("application/yaml", E::RESOURCE, Ok(plain(Encoding::Yaml))),
            ("*/*", E::RESOURCE, Ok(plain(Encoding::Json))),
            ("*", E::RESOURCE, Ok(plain(Encoding::Json))),
            ("application/*", E::RESOURCE, Ok(plain(Encoding::Json))),
            (CLIENT_GO_DEFAULT, E::RESOURCE, Ok(plain(Encoding::Json))),
            (KUBECTL_GET, E::RESOURCE, Ok(table_v1)),
            // A subresource without a table convertor falls through to the plain object.
            (KUBECTL_GET, E::NONE, Ok(plain(Encoding::Json))),
            (
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
                E::RESOURCE,
                Ok(conv(Conversion::Table { version: "v1beta1" })),
            ),
            (
                "application/yaml;as=Table;v=v1;g=meta.k8s.io",
                E::RESOURCE,
                Ok(MediaType {
                    encoding: Encoding::Yaml,
                    conversion: Conversion::Table { version: "v1" },
                    pretty: false,
                }),
            ),
            // A Table without group and version is not a conversion we know.
            ("application/json;as=Table", E::RESOURCE, Err(406)),
            (
                "application/json;as=Table;v=v2;g=meta.k8s.io",
                E::RESOURCE,
                Err(406),
            ),
            ("application/json;as=Pod;v=v1;g=", E::RESOURCE, Err(406)),
            (
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
                E::RESOURCE,
                Ok(conv(Conversion::PartialObjectMetadataList {
                    version: "v1",
                })),
            ),
            (
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                E::RESOURCE,
                Ok(conv(Conversion::PartialObjectMetadata { version: "v1" })),
            ),
            // Protobuf is skipped: JSON when also acceptable, 406 otherwise.
            ("application/vnd.kubernetes.protobuf", E::RESOURCE, Err(406)),
            (
                "application/vnd.kubernetes.protobuf, */*",
                E::RESOURCE,
                Ok(plain(Encoding::Json)),
            ),
            (
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                E::RESOURCE,
                Ok(table_v1),
            ),
            ("text/html", E::RESOURCE, Err(406)),
            // Quality values reorder clauses; q=0 refuses a type.
            (
                "application/json;q=0.5, application/yaml",
                E::RESOURCE,
                Ok(plain(Encoding::Yaml)),
            ),
            (
                "application/yaml;q=0, */*;q=0.1",
                E::RESOURCE,
                Ok(plain(Encoding::Json)),
            ),
            ("application/json;q=0", E::RESOURCE, Err(406)),
            // Concrete types beat wildcards of the same quality.
            (
                "*/*, application/yaml",
                E::RESOURCE,
                Ok(plain(Encoding::Yaml)),
            ),
            (
                "application/json;pretty=1",
                E::RESOURCE,
                Ok(MediaType {
                    pretty: true,
                    ..plain(Encoding::Json)
                }),
            ),
            // Unknown parameters are ignored.
            (
                "application/json;charset=utf-8",
                E::RESOURCE,
                Ok(plain(Encoding::Json)),
            ),
            // Discovery.
            (
                KUBECTL_DISCOVERY,
                E::DISCOVERY,
                Ok(conv(Conversion::AggregatedDiscovery { version: "v2" })),
            ),
            (
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
                E::DISCOVERY,
                Ok(conv(Conversion::AggregatedDiscovery { version: "v2beta1" })),
            ),
            (
                "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.9,application/json;q=0.8",
                E::DISCOVERY,
                Ok(conv(Conversion::AggregatedDiscovery { version: "v2" })),
            ),
            // Legacy discovery clients get the unaggregated documents.
            (
                "application/json, */*",
                E::DISCOVERY,
                Ok(plain(Encoding::Json)),
            ),
            (KUBECTL_DISCOVERY, E::RESOURCE, Ok(plain(Encoding::Json))),
            (
                "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList",
                E::DISCOVERY,
                Err(406),
            ),
        ];
        for (accept, endpoint, want) in cases {
            assert_eq!(neg(accept, endpoint), want, "Accept: {accept}");
        }
    }

    #[test]
    fn not_acceptable_lists_what_is_served() {
        let err =
            negotiate_output(Some("text/html"), EndpointRestrictions::RESOURCE).expect_err("406");
        assert_eq!(err.reason(), "NotAcceptable");
        assert_eq!(
            err.message(),
            "only the following media types are accepted: application/json, application/yaml"
        );
    }

    #[test]
    fn content_types() {
        assert_eq!(MediaType::JSON.content_type(), "application/json");
        assert_eq!(
            conv(Conversion::AggregatedDiscovery { version: "v2" }).content_type(),
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        assert_eq!(
            conv(Conversion::Table { version: "v1" }).content_type(),
            "application/json"
        );
    }

    #[test]
    fn input_negotiation() {
        let cases = [
            (None, Ok(InputFormat::Json)),
            (Some("application/json"), Ok(InputFormat::Json)),
            (
                Some("application/json; charset=utf-8"),
                Ok(InputFormat::Json),
            ),
            (Some("Application/JSON"), Ok(InputFormat::Json)),
            (Some("application/yaml"), Ok(InputFormat::Yaml)),
            (
                Some("application/vnd.kubernetes.protobuf"),
                Ok(InputFormat::Protobuf),
            ),
            (Some("text/plain"), Err(415)),
            (Some("application/merge-patch+json"), Err(415)),
        ];
        for (ct, want) in cases {
            assert_eq!(
                negotiate_input(ct).map_err(|e| e.code().as_u16()),
                want,
                "{ct:?}"
            );
        }
        let err = negotiate_input(Some("text/plain")).expect_err("415");
        assert_eq!(
            err.message(),
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn patch_negotiation() {
        let cases = [
            (Some("application/json-patch+json"), Ok(PatchType::Json)),
            (Some("application/merge-patch+json"), Ok(PatchType::Merge)),
            (
                Some("application/strategic-merge-patch+json; charset=utf-8"),
                Ok(PatchType::StrategicMerge),
            ),
            (Some("application/apply-patch+yaml"), Ok(PatchType::Apply)),
            (None, Err(415)),
            (Some("application/json"), Err(415)),
        ];
        for (ct, want) in cases {
            assert_eq!(
                negotiate_patch(ct).map_err(|e| e.code().as_u16()),
                want,
                "{ct:?}"
            );
        }
        assert_eq!(PatchType::Apply.input_format(), InputFormat::Yaml);
        assert_eq!(PatchType::Merge.media_type(), MEDIA_MERGE_PATCH);
        let err = negotiate_patch(None).expect_err("415");
        assert!(
            err.message()
                .ends_with("application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"),
            "{}",
            err.message()
        );
    }
}

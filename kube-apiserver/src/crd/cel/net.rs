//! Kubernetes' CEL IP and CIDR libraries: `ip(s)`, `isIP(s)`, `ip.isCanonical(s)`, `cidr(s)`,
//! `isCIDR(s)` and their methods (`family`, `isUnspecified`, `isLoopback`,
//! `isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`; `containsIP`,
//! `containsCIDR`, `ip`, `masked`, `prefixLength`).
//!
//! Addresses are carried as maps holding their canonical text under a key no rule can write,
//! so `==` compares addresses (`ip('::1') == ip('0:0::1')`).

use cel::common::types::{DYN_TYPE, MAP_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

const IP_KEY: &str = "@ip";
const CIDR_KEY: &str = "@cidr";

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;
type Function = for<'b, 'v> fn(Args<'b, 'v>) -> Ret<'b, 'v>;

/// Declares the libraries' functions on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let globals: &[(&str, Function)] = &[
        ("ip", ip),
        ("isIP", is_ip),
        ("ip.isCanonical", is_canonical),
        ("cidr", cidr),
        ("isCIDR", is_cidr),
    ];
    for (name, f) in globals {
        env.add_overload(name, &format!("net_{name}"), vec![STRING_TYPE], *f)?;
    }
    env.add_overload("string", "net_to_string", vec![MAP_TYPE], to_string)?;
    let methods: &[(&str, usize, Function)] = &[
        ("family", 0, family),
        ("isUnspecified", 0, |a| ip_test(a, IpAddr::is_unspecified)),
        ("isLoopback", 0, |a| ip_test(a, IpAddr::is_loopback)),
        ("isLinkLocalMulticast", 0, |a| {
            ip_test(a, link_local_multicast)
        }),
        ("isLinkLocalUnicast", 0, |a| ip_test(a, link_local_unicast)),
        ("isGlobalUnicast", 0, |a| ip_test(a, global_unicast)),
        ("containsIP", 1, contains_ip),
        ("containsCIDR", 1, contains_cidr),
        ("ip", 0, cidr_ip),
        ("masked", 0, masked),
        ("prefixLength", 0, prefix_length),
    ];
    for (name, arity, f) in methods {
        let args = (0..*arity).map(|_| DYN_TYPE).collect();
        env.add_member_overload(name, &format!("net_member_{name}"), MAP_TYPE, args, *f)?;
    }
    Ok(())
}

fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Value>, ExecutionError> {
    args.iter().map(|a| Value::try_from(a.as_ref())).collect()
}

fn ret<'b, 'v>(v: Value) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(v)?))
}

fn tagged(key: &str, text: String) -> Value {
    let mut m = HashMap::new();
    m.insert(
        Key::String(Arc::new(key.to_string())),
        Value::String(Arc::new(text)),
    );
    Value::Map(Map { map: Arc::new(m) })
}

fn tag<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    let Value::Map(m) = v else { return None };
    match m.map.get(&Key::String(Arc::new(key.to_string()))) {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    }
}

fn string_arg(args: &[CowVal<'_, '_>], function: &str) -> Result<Arc<String>, ExecutionError> {
    match values(args)?.into_iter().next() {
        Some(Value::String(s)) => Ok(s),
        _ => Err(ExecutionError::function_error(
            function,
            "expected a string",
        )),
    }
}

/// An address as Kubernetes accepts it: no zone, no IPv4-mapped IPv6 form.
fn parse_ip(s: &str) -> Option<IpAddr> {
    if s.contains('%') {
        return None;
    }
    let ip: IpAddr = s.parse().ok()?;
    match ip {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => None,
        ip => Some(ip),
    }
}

/// A prefix as Kubernetes accepts it (`addr/len`, the address need not be masked).
fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = s.split_once('/')?;
    let ip = parse_ip(addr)?;
    if len.is_empty() || (len.len() > 1 && len.starts_with('0')) {
        return None;
    }
    let len: u8 = len.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((ip, len))
}

fn ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, "ip")?;
    let ip = parse_ip(&s).ok_or_else(|| {
        ExecutionError::function_error("ip", format!("IP Address {:?} parse error during conversion from string: ParseAddr({:?}): unable to parse IP", s.as_str(), s.as_str()))
    })?;
    ret(tagged(IP_KEY, ip.to_string()))
}

fn is_ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ret(Value::Bool(parse_ip(&string_arg(&args, "isIP")?).is_some()))
}

fn is_canonical<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, "ip.isCanonical")?;
    let ip = parse_ip(&s).ok_or_else(|| {
        ExecutionError::function_error(
            "ip.isCanonical",
            format!("IP Address {:?} parse error", s.as_str()),
        )
    })?;
    ret(Value::Bool(ip.to_string() == *s))
}

fn cidr<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = string_arg(&args, "cidr")?;
    let (ip, len) = parse_cidr(&s).ok_or_else(|| {
        ExecutionError::function_error("cidr", format!("network address parse error during conversion from string: network address parse error: netip.ParsePrefix({:?}): bad prefix", s.as_str()))
    })?;
    ret(tagged(CIDR_KEY, format!("{ip}/{len}")))
}

fn is_cidr<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ret(Value::Bool(
        parse_cidr(&string_arg(&args, "isCIDR")?).is_some(),
    ))
}

fn receiver_ip(args: &[CowVal<'_, '_>], function: &str) -> Result<IpAddr, ExecutionError> {
    let vals = values(args)?;
    vals.first()
        .and_then(|v| tag(v, IP_KEY))
        .and_then(parse_ip)
        .ok_or_else(|| ExecutionError::function_error(function, "expected an IP address"))
}

fn receiver_cidr(
    args: &[CowVal<'_, '_>],
    function: &str,
) -> Result<((IpAddr, u8), Vec<Value>), ExecutionError> {
    let vals = values(args)?;
    let prefix = vals
        .first()
        .and_then(|v| tag(v, CIDR_KEY))
        .and_then(parse_cidr)
        .ok_or_else(|| ExecutionError::function_error(function, "expected a CIDR"))?;
    Ok((prefix, vals))
}

/// `string(ip)` and `string(cidr)`: the canonical text.
fn to_string<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let vals = values(&args)?;
    let text = vals
        .first()
        .and_then(|v| tag(v, IP_KEY).or_else(|| tag(v, CIDR_KEY)))
        .map(str::to_string)
        .ok_or_else(|| ExecutionError::function_error("string", "no such overload"))?;
    ret(Value::String(Arc::new(text)))
}

fn family<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let ip = receiver_ip(&args, "family")?;
    ret(Value::Int(if ip.is_ipv4() { 4 } else { 6 }))
}

fn ip_test<'b, 'v>(args: Args<'b, 'v>, test: fn(&IpAddr) -> bool) -> Ret<'b, 'v> {
    let ip = receiver_ip(&args, "ip")?;
    ret(Value::Bool(test(&ip)))
}

fn link_local_multicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn link_local_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `netip.Addr.IsGlobalUnicast`: not unspecified, loopback, multicast, link-local or
/// the IPv4 broadcast address.
fn global_unicast(ip: &IpAddr) -> bool {
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || link_local_unicast(ip)
        || broadcast)
}

fn bits(ip: &IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(*v4)),
        IpAddr::V6(v6) => u128::from(*v6),
    }
}

fn width(ip: &IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// Whether `ip` falls in `prefix` (addresses of the other family never do).
fn in_prefix((net, len): (IpAddr, u8), ip: &IpAddr) -> bool {
    if net.is_ipv4() != ip.is_ipv4() {
        return false;
    }
    let shift = u32::from(width(&net) - len);
    let (a, b) = (bits(&net), bits(ip));
    shift >= 128 || (a >> shift) == (b >> shift)
}

fn masked_ip((net, len): (IpAddr, u8)) -> IpAddr {
    let shift = u32::from(width(&net) - len);
    let kept = if shift >= 128 {
        0
    } else {
        (bits(&net) >> shift) << shift
    };
    match net {
        IpAddr::V4(_) => IpAddr::V4((kept as u32).into()),
        IpAddr::V6(_) => IpAddr::V6(kept.into()),
    }
}

fn contains_ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (prefix, vals) = receiver_cidr(&args, "containsIP")?;
    let ip = match vals.get(1) {
        Some(Value::String(s)) => parse_ip(s),
        Some(v) => tag(v, IP_KEY).and_then(parse_ip),
        None => None,
    }
    .ok_or_else(|| ExecutionError::function_error("containsIP", "expected an IP address"))?;
    ret(Value::Bool(in_prefix(prefix, &ip)))
}

fn contains_cidr<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (prefix, vals) = receiver_cidr(&args, "containsCIDR")?;
    let other = match vals.get(1) {
        Some(Value::String(s)) => parse_cidr(s),
        Some(v) => tag(v, CIDR_KEY).and_then(parse_cidr),
        None => None,
    }
    .ok_or_else(|| ExecutionError::function_error("containsCIDR", "expected a CIDR"))?;
    let inside = other.1 >= prefix.1 && in_prefix(prefix, &other.0);
    ret(Value::Bool(inside))
}

fn cidr_ip<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let ((ip, _), _) = receiver_cidr(&args, "ip")?;
    ret(tagged(IP_KEY, ip.to_string()))
}

fn masked<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (prefix, _) = receiver_cidr(&args, "masked")?;
    ret(tagged(
        CIDR_KEY,
        format!("{}/{}", masked_ip(prefix), prefix.1),
    ))
}

fn prefix_length<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let ((_, len), _) = receiver_cidr(&args, "prefixLength")?;
    ret(Value::Int(i64::from(len)))
}

#[cfg(test)]
mod tests {
    use super::super::library::env;
    use cel::{Context, Value};

    fn eval(src: &str) -> Result<Value, cel::ExecutionError> {
        let env = env();
        let program = env.compile(src).expect(src);
        program.execute(&Context::with_env(env))
    }

    #[test]
    fn ips_and_cidrs() {
        let truths = [
            "isIP('10.0.0.1') && isIP('::1') && !isIP('10.0.0.256') && !isIP('::ffff:1.2.3.4')",
            "ip('::1') == ip('0:0::1')",
            "ip('10.0.0.1').family() == 4 && ip('fe80::1').family() == 6",
            "ip('127.0.0.1').isLoopback() && ip('0.0.0.0').isUnspecified()",
            "ip('fe80::1').isLinkLocalUnicast() && ip('ff02::1').isLinkLocalMulticast()",
            "ip('8.8.8.8').isGlobalUnicast() && !ip('127.0.0.1').isGlobalUnicast()",
            "ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')",
            "isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/33') && !isCIDR('10.0.0.0')",
            "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
            "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')",
            "cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8') && cidr('10.1.2.3/8').prefixLength() == 8",
            "cidr('10.1.2.3/8').ip() == ip('10.1.2.3')",
            "string(ip('2001:db8:0::1')) == '2001:db8::1' && string(cidr('10.0.0.0/8')) == '10.0.0.0/8'",
            "cidr('::/0').containsIP('2001:db8::1') && !cidr('::/0').containsIP('1.2.3.4')",
        ];
        for src in truths {
            assert_eq!(eval(src), Ok(Value::Bool(true)), "{src}");
        }
        assert!(eval("ip('nope')").is_err());
        assert!(eval("cidr('10.0.0.0/x')").is_err());
    }
}

//! The CEL environment rules compile and run in: the standard library, the `strings`,
//! `lists`, `math` and `encoders` extensions of the `cel` crate, and the parts of Kubernetes'
//! own libraries that custom resources commonly use: lists (`isSorted`, `sum`, `min`, `max`,
//! `indexOf`, `lastIndexOf`), regex (`find`, `findAll`), URLs (`url`, `isURL` and the
//! getters), `sets.contains/equivalent/intersects`, quantities (`quantity.rs`), IPs and CIDRs
//! (`net.rs`), `cel.bind` and the two-variable comprehensions (`comprehensions.rs`), and
//! the named formats (`format.rs`).

use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, MAP_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map};
use cel::parser::{Macro, MacroExprHelper};
use cel::{Env, ExecutionError, ParseError, Value, extensions};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The one environment every rule uses (it holds no per-rule state).
pub(super) fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(build().expect("the CEL library declares no overload twice")))
        .clone()
}

fn build() -> Result<Env, cel::DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(extensions::strings)?;
    env.add_extension(extensions::lists)?;
    env.add_extension(extensions::math)?;
    env.add_extension(extensions::encoders)?;
    env.add_extension(super::quantity::register)?;
    env.add_extension(super::net::register)?;
    env.add_macro(Macro::receiver("bind", 3, bind_macro))?;
    env.add_extension(super::comprehensions::register)?;
    env.add_extension(super::format::register)?;
    env.add_extension(super::unordered::register)?;
    env.add_overload(
        "matches",
        "matches",
        vec![STRING_TYPE, STRING_TYPE],
        matches,
    )?;
    env.add_member_overload(
        "matches",
        "string.matches(string)",
        STRING_TYPE,
        vec![STRING_TYPE],
        matches,
    )?;
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_n",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    for (name, getter) in URL_GETTERS {
        env.add_member_overload(name, &format!("url_{name}"), MAP_TYPE, vec![], *getter)?;
    }
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_intersects,
    )?;
    Ok(env)
}

/// `cel.bind(name, init, expr)`: `expr` with `name` bound to `init`, evaluated once; written
/// as a comprehension over nothing whose accumulator is the binding, as cel-go does.
fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let on_cel = matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel");
    if !on_cel || args.len() != 3 {
        return Ok(None);
    }
    let name = match &args[0].expr {
        Expr::Ident(name) => name.clone(),
        _ => {
            return Err(helper.new_error(
                args[0].id,
                "cel.bind() variable name must be a simple identifier",
            ));
        }
    };
    target.take();
    let result = args.pop().expect("three arguments");
    let init = args.pop().expect("three arguments");
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: name.clone(),
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: helper.next_expr(Expr::Ident(name)),
        result,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type List = Arc<Vec<Value>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// The arguments as plain values (the overloads here are not on hot paths).
fn values(args: &[CowVal<'_, '_>], want: usize) -> Result<Vec<Value>, ExecutionError> {
    if args.len() != want {
        return Err(ExecutionError::invalid_argument_count(want, args.len()));
    }
    args.iter().map(|a| Value::try_from(a.as_ref())).collect()
}

fn ret<'b, 'v>(v: Value) -> Ret<'b, 'v> {
    Ok(CowVal::Owned(Box::<dyn cel::common::value::Val>::try_from(
        v,
    )?))
}

fn list(v: &Value, function: &str) -> Result<List, ExecutionError> {
    match v {
        Value::List(l) => Ok(l.clone()),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a list, got {}", other.type_of()),
        )),
    }
}

fn string(v: &Value, function: &str) -> Result<Arc<String>, ExecutionError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a string, got {}", other.type_of()),
        )),
    }
}

fn compare(a: &Value, b: &Value, function: &str) -> Result<std::cmp::Ordering, ExecutionError> {
    a.partial_cmp(b).ok_or_else(|| {
        ExecutionError::function_error(
            function,
            format!("no such overload: {} < {}", a.type_of(), b.type_of()),
        )
    })
}

fn is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [l] = <[Value; 1]>::try_from(values(&args, 1)?).expect("one value");
    let l = list(&l, "isSorted")?;
    for pair in l.windows(2) {
        if compare(&pair[0], &pair[1], "isSorted")? == std::cmp::Ordering::Greater {
            return ret(Value::Bool(false));
        }
    }
    ret(Value::Bool(true))
}

fn sum<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [l] = <[Value; 1]>::try_from(values(&args, 1)?).expect("one value");
    let l = list(&l, "sum")?;
    let mut items = l.iter();
    let Some(first) = items.next() else {
        return ret(Value::Int(0));
    };
    let mut total = first.clone();
    for item in items {
        total = (total + item.clone())?;
    }
    ret(total)
}

fn extreme<'b, 'v>(args: Args<'b, 'v>, name: &str, want: std::cmp::Ordering) -> Ret<'b, 'v> {
    let [l] = <[Value; 1]>::try_from(values(&args, 1)?).expect("one value");
    let l = list(&l, name)?;
    let mut items = l.iter();
    let Some(mut best) = items.next() else {
        return Err(ExecutionError::function_error(
            name,
            format!("{name} called on empty list"),
        ));
    };
    for item in items {
        if compare(item, best, name)? == want {
            best = item;
        }
    }
    ret(best.clone())
}

fn min<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    extreme(args, "min", std::cmp::Ordering::Less)
}

fn max<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    extreme(args, "max", std::cmp::Ordering::Greater)
}

fn position<'b, 'v>(args: Args<'b, 'v>, last: bool) -> Ret<'b, 'v> {
    let [l, needle] = <[Value; 2]>::try_from(values(&args, 2)?).expect("two values");
    let l = list(&l, "indexOf")?;
    let found = if last {
        l.iter().rposition(|v| *v == needle)
    } else {
        l.iter().position(|v| *v == needle)
    };
    ret(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    position(args, false)
}

fn last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    position(args, true)
}

/// How many compiled patterns are kept; past it the cache starts over. Patterns may come
/// from the data (`self.a.matches(self.b)`), so both this and each pattern's size are bounded.
const REGEX_CACHE_SIZE: usize = 128;

/// The most memory one compiled pattern may take.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// `pattern` compiled, from a process-wide cache: rules apply the same few patterns to every
/// item of every object, and compiling is what costs.
fn regex(pattern: &str, function: &str) -> Result<Arc<regex::Regex>, ExecutionError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<regex::Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(re) = cache.lock().get(pattern) {
        return Ok(re.clone());
    }
    let compiled = regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build();
    let re = Arc::new(compiled.map_err(|e| {
        ExecutionError::function_error(function, format!("error parsing regexp: {e}"))
    })?);
    let mut cache = cache.lock();
    if cache.len() >= REGEX_CACHE_SIZE {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Ok(re)
}

fn matches<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [s, re] = <[Value; 2]>::try_from(values(&args, 2)?).expect("two values");
    let (s, re) = (string(&s, "matches")?, string(&re, "matches")?);
    ret(Value::Bool(regex(&re, "matches")?.is_match(&s)))
}

fn find<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [s, re] = <[Value; 2]>::try_from(values(&args, 2)?).expect("two values");
    let (s, re) = (string(&s, "find")?, string(&re, "find")?);
    let found = regex(&re, "find")?
        .find(&s)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    ret(Value::String(Arc::new(found)))
}

fn find_all_limited<'b, 'v>(s: &Value, re: &Value, limit: i64) -> Ret<'b, 'v> {
    let (s, re) = (string(s, "findAll")?, string(re, "findAll")?);
    let re = regex(&re, "findAll")?;
    let limit = if limit < 0 {
        usize::MAX
    } else {
        limit as usize
    };
    let found = re
        .find_iter(&s)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    ret(Value::List(Arc::new(found)))
}

fn find_all<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [s, re] = <[Value; 2]>::try_from(values(&args, 2)?).expect("two values");
    find_all_limited(&s, &re, -1)
}

fn find_all_n<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [s, re, n] = <[Value; 3]>::try_from(values(&args, 3)?).expect("three values");
    let Value::Int(n) = n else {
        return Err(ExecutionError::function_error("findAll", "expected an int"));
    };
    find_all_limited(&s, &re, n)
}

/// The parts of an absolute URI or an absolute path, as Go's `url.ParseRequestURI` splits it.
pub(super) struct UrlParts {
    scheme: String,
    host: String,
    path: String,
    query: String,
}

pub(super) fn parse_url(s: &str) -> Option<UrlParts> {
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (before_query, query) = match s.split_once('?') {
        Some((b, q)) => (b, q.to_string()),
        None => (s, String::new()),
    };
    if before_query.starts_with('/') {
        return Some(UrlParts {
            scheme: String::new(),
            host: String::new(),
            path: before_query.to_string(),
            query,
        });
    }
    let (scheme, rest) = before_query.split_once(':')?;
    let valid_scheme = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return None;
    }
    let (host, path) = match rest.strip_prefix("//") {
        Some(authority_and_path) => match authority_and_path.find('/') {
            Some(i) => (
                authority_and_path[..i].to_string(),
                authority_and_path[i..].to_string(),
            ),
            None => (authority_and_path.to_string(), String::new()),
        },
        None if rest.starts_with('/') => (String::new(), rest.to_string()),
        // An opaque URI (`mailto:x`) is not a request URI.
        None => return None,
    };
    // The host is what follows any userinfo.
    let host = host
        .rsplit_once('@')
        .map_or(host.clone(), |(_, h)| h.to_string());
    Some(UrlParts {
        scheme: scheme.to_string(),
        host,
        path,
        query,
    })
}

fn url<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [s] = <[Value; 1]>::try_from(values(&args, 1)?).expect("one value");
    let s = string(&s, "url")?;
    let parts = parse_url(&s).ok_or_else(|| {
        ExecutionError::function_error("url", format!("URL parse error during conversion from string: parse {:?}: invalid URI for request", s.as_str()))
    })?;
    // A URL is a map under a key no rule can write, so the getters recognise it.
    let mut m: HashMap<Key, Value> = HashMap::new();
    let mut put = |k: &str, v: String| {
        m.insert(
            Key::String(Arc::new(k.to_string())),
            Value::String(Arc::new(v)),
        );
    };
    put("@url.scheme", parts.scheme);
    put("@url.host", parts.host);
    put("@url.path", parts.path);
    put("@url.query", parts.query);
    ret(Value::Map(Map { map: Arc::new(m) }))
}

fn is_url<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let [s] = <[Value; 1]>::try_from(values(&args, 1)?).expect("one value");
    ret(Value::Bool(parse_url(&string(&s, "isURL")?).is_some()))
}

type Getter = for<'b, 'v> fn(Args<'b, 'v>) -> Ret<'b, 'v>;

const URL_GETTERS: &[(&str, Getter)] = &[
    ("getScheme", |a| url_part(a, "@url.scheme", Part::Whole)),
    ("getHost", |a| url_part(a, "@url.host", Part::Whole)),
    ("getHostname", |a| url_part(a, "@url.host", Part::Hostname)),
    ("getPort", |a| url_part(a, "@url.host", Part::Port)),
    ("getEscapedPath", |a| url_part(a, "@url.path", Part::Whole)),
    ("getQuery", url_query),
];

enum Part {
    Whole,
    Hostname,
    Port,
}

fn url_field(args: &[CowVal<'_, '_>], key: &str) -> Result<String, ExecutionError> {
    let [m] = <[Value; 1]>::try_from(values(args, 1)?).expect("one value");
    let Value::Map(m) = m else {
        return Err(ExecutionError::function_error(key, "expected a URL"));
    };
    match m.map.get(&Key::String(Arc::new(key.to_string()))) {
        Some(Value::String(s)) => Ok(s.to_string()),
        _ => Err(ExecutionError::function_error(
            key.trim_start_matches("@url."),
            "expected a URL",
        )),
    }
}

fn url_part<'b, 'v>(args: Args<'b, 'v>, key: &str, part: Part) -> Ret<'b, 'v> {
    let whole = url_field(&args, key)?;
    let (hostname, port) = split_host_port(&whole);
    let out = match part {
        Part::Whole => whole.clone(),
        Part::Hostname => hostname,
        Part::Port => port,
    };
    ret(Value::String(Arc::new(out)))
}

/// `host:port` split as Go's `url.URL.Hostname()`/`Port()` (IPv6 literals keep no brackets).
fn split_host_port(host: &str) -> (String, String) {
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, tail)) => (
                ip.to_string(),
                tail.strip_prefix(':').unwrap_or("").to_string(),
            ),
            None => (host.to_string(), String::new()),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => (h.to_string(), p.to_string()),
        _ => (host.to_string(), String::new()),
    }
}

fn url_query<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let query = url_field(&args, "@url.query")?;
    let mut out: HashMap<Key, Vec<Value>> = HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.entry(Key::String(Arc::new(k.to_string())))
            .or_default()
            .push(Value::String(Arc::new(v.to_string())));
    }
    let map = out
        .into_iter()
        .map(|(k, v)| (k, Value::List(Arc::new(v))))
        .collect::<HashMap<_, _>>();
    ret(Value::Map(Map { map: Arc::new(map) }))
}

fn two_lists(args: &[CowVal<'_, '_>], name: &str) -> Result<(List, List), ExecutionError> {
    let [a, b] = <[Value; 2]>::try_from(values(args, 2)?).expect("two values");
    Ok((list(&a, name)?, list(&b, name)?))
}

fn sets_contains<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two_lists(&args, "sets.contains")?;
    ret(Value::Bool(b.iter().all(|x| a.contains(x))))
}

fn sets_equivalent<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two_lists(&args, "sets.equivalent")?;
    ret(Value::Bool(
        b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x)),
    ))
}

fn sets_intersects<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two_lists(&args, "sets.intersects")?;
    ret(Value::Bool(b.iter().any(|x| a.contains(x))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cel::Context;

    fn eval(src: &str) -> Result<Value, ExecutionError> {
        let env = env();
        let program = env.compile(src).expect(src);
        program.execute(&Context::with_env(env))
    }

    #[test]
    fn kubernetes_list_functions() {
        let cases = [
            ("[1, 2, 3].isSorted()", Value::Bool(true)),
            ("['b', 'a'].isSorted()", Value::Bool(false)),
            ("[1, 2, 3].sum()", Value::Int(6)),
            ("[1.5, 2.0].sum()", Value::Float(3.5)),
            ("[].sum()", Value::Int(0)),
            ("[3, 1, 2].min()", Value::Int(1)),
            ("[3, 1, 2].max()", Value::Int(3)),
            ("[1, 2, 1].indexOf(1)", Value::Int(0)),
            ("[1, 2, 1].lastIndexOf(1)", Value::Int(2)),
            ("[1, 2].indexOf(5)", Value::Int(-1)),
            ("'abc'.indexOf('c')", Value::Int(2)),
        ];
        for (src, want) in cases {
            assert_eq!(eval(src), Ok(want), "{src}");
        }
        assert!(eval("[].min()").is_err());
    }

    #[test]
    fn regex_and_string_functions() {
        assert_eq!(
            eval("'abc 123 def 456'.find('[0-9]+')"),
            Ok(Value::String(Arc::new("123".into())))
        );
        assert_eq!(
            eval("'abc 123 def 456'.findAll('[0-9]+') == ['123', '456']"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("'a1b2c3'.findAll('[0-9]', 2).size()"),
            Ok(Value::Int(2))
        );
        assert_eq!(
            eval("'FooBar'.lowerAscii() == 'foobar'"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("'foo-bar'.matches('^[a-z-]+$') && matches('a1', '[0-9]')"),
            Ok(Value::Bool(true))
        );
        assert!(eval("'x'.matches('[')").is_err());
    }

    #[test]
    fn urls() {
        let cases = [
            (
                "url('https://example.com:8080/a/b?x=1').getScheme() == 'https'",
                true,
            ),
            (
                "url('https://example.com:8080/a').getHost() == 'example.com:8080'",
                true,
            ),
            (
                "url('https://example.com:8080/a').getHostname() == 'example.com'",
                true,
            ),
            (
                "url('https://example.com:8080/a').getPort() == '8080'",
                true,
            ),
            ("url('https://[::1]:80/').getHostname() == '::1'", true),
            (
                "url('https://example.com/a/b').getEscapedPath() == '/a/b'",
                true,
            ),
            (
                "url('https://e.com/?a=1&a=2&b').getQuery()['a'] == ['1', '2']",
                true,
            ),
            ("isURL('https://example.com')", true),
            ("isURL('/absolute/path')", true),
            ("isURL('not a url')", false),
            ("isURL('relative/path')", false),
        ];
        for (src, want) in cases {
            assert_eq!(eval(src), Ok(Value::Bool(want)), "{src}");
        }
        assert!(eval("url('::bad')").is_err());
    }

    #[test]
    fn bind() {
        assert_eq!(
            eval("cel.bind(x, [1, 2, 3], x.size() == 3 && x[0] == 1)"),
            Ok(Value::Bool(true))
        );
        assert!(env().compile("cel.bind(1, 2, 3)").is_err());
    }

    #[test]
    fn sets() {
        assert_eq!(
            eval("sets.contains([1, 2, 3], [2, 3])"),
            Ok(Value::Bool(true))
        );
        assert_eq!(eval("sets.contains([1], [2])"), Ok(Value::Bool(false)));
        assert_eq!(
            eval("sets.equivalent([1, 2], [2, 1, 1])"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("sets.intersects([1, 2], [3, 2])"),
            Ok(Value::Bool(true))
        );
    }
}

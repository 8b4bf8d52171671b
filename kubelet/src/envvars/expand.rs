//! `$(VAR)` expansion as upstream's forked `expansion` package: `$$` is an escaped `$`, a
//! reference to an unknown variable (or an unterminated `$(`) is kept verbatim.

use std::collections::HashMap;

/// Expands `$(NAME)` references in `input` with `lookup`; unresolved ones stay `$(NAME)`.
pub fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let bytes = input.as_bytes();
    // Work on bytes: the only bytes inspected are ASCII, so every slice boundary taken below
    // sits on a char boundary and the output stays valid UTF-8.
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance = match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    1
                }
                b'(' => match rest[1..].find(')') {
                    Some(end) => {
                        let name = &rest[1..1 + end];
                        match lookup(name) {
                            Some(v) => out.push_str(&v),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        end + 2
                    }
                    None => {
                        // An incomplete reference: the operator and opener are kept and the
                        // scan resumes after the opener.
                        out.push_str("$(");
                        1
                    }
                },
                _ => {
                    // A lone `$`: kept together with the following character.
                    let ch = rest.chars().next().map_or(1, char::len_utf8);
                    out.push('$');
                    out.push_str(&rest[..ch]);
                    ch
                }
            };
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    if checkpoint < input.len() {
        out.push_str(&input[checkpoint..]);
    }
    out
}

/// Upstream's `ExpandContainerCommandAndArgs`: `$(VAR)` in command and args resolved against
/// the container's final environment (a later duplicate name wins); unresolved references are
/// kept verbatim and `$$` becomes `$`.
pub fn expand_command_and_args(
    command: &[String],
    args: &[String],
    envs: &[(String, String)],
) -> (Vec<String>, Vec<String>) {
    let map: HashMap<&str, &str> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let lookup = |name: &str| map.get(name).map(|v| v.to_string());
    let run = |list: &[String]| list.iter().map(|s| expand(s, &lookup)).collect();
    (run(command), run(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_follows_upstream_rules() {
        let vars: HashMap<&str, &str> = [
            ("VAR_A", "A"),
            ("VAR_B", "B"),
            ("VAR_C", "C"),
            ("VAR_REF", "$(VAR_A)"),
            ("VAR_EMPTY", ""),
            ("BLU", "blue"),
            ("ÖÜ", "umlaut"),
        ]
        .into_iter()
        .collect();
        let lookup = |n: &str| vars.get(n).map(|v| v.to_string());
        let cases = [
            ("", ""),
            ("plain", "plain"),
            ("$(VAR_A)", "A"),
            ("___$(VAR_A)___", "___A___"),
            ("$(VAR_A)$(VAR_B)$(VAR_C)", "ABC"),
            ("$(VAR_A)-$(VAR_B)", "A-B"),
            ("$(VAR_REF)", "$(VAR_A)"),
            ("$(VAR_EMPTY)", ""),
            ("$(UNKNOWN)", "$(UNKNOWN)"),
            ("$(VAR_A", "$(VAR_A"),
            ("$(", "$("),
            ("$()", "$()"),
            ("$$(VAR_A)", "$(VAR_A)"),
            ("$$$(VAR_A)", "$A"),
            ("$$$$(VAR_A)", "$$(VAR_A)"),
            ("$$", "$"),
            ("$", "$"),
            ("foo$", "foo$"),
            ("$VAR_A", "$VAR_A"),
            ("$$VAR_A", "$VAR_A"),
            ("$(VAR_A)$", "A$"),
            ("$Ö", "$Ö"),
            ("$(ÖÜ)!", "umlaut!"),
            ("$(BLU) and ($(BLU))", "blue and (blue)"),
            ("$(VAR_A)$(VAR_A", "A$(VAR_A"),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, &lookup), want, "input {input:?}");
        }
    }

    #[test]
    fn command_and_args_use_the_last_duplicate() {
        let envs = vec![
            ("A".to_string(), "first".to_string()),
            ("A".to_string(), "second".to_string()),
        ];
        let (cmd, args) = expand_command_and_args(
            &["echo".into(), "$(A)".into()],
            &["$(B)".into(), "$$(A)".into()],
            &envs,
        );
        assert_eq!(cmd, vec!["echo", "second"]);
        assert_eq!(args, vec!["$(B)", "$(A)"]);
    }
}

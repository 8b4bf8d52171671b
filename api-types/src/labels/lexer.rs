//! Tokeniser for the label selector string syntax.

/// Kinds of token in a selector string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn symbol_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits the whole input into tokens, ending with `EndOfString`.
pub(crate) fn tokenize(input: &str) -> Vec<(Token, String)> {
    let chars: Vec<char> = input.chars().collect();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < chars.len() && is_whitespace(chars[pos]) {
            pos += 1;
        }
        // A NUL ends the input, as upstream's reader treats byte 0 as end of string.
        if pos >= chars.len() || chars[pos] == '\0' {
            out.push((Token::EndOfString, String::new()));
            return out;
        }
        if is_special(chars[pos]) {
            out.push(scan_symbol(&chars, &mut pos));
        } else {
            let start = pos;
            while pos < chars.len()
                && chars[pos] != '\0'
                && !is_whitespace(chars[pos])
                && !is_special(chars[pos])
            {
                pos += 1;
            }
            let word: String = chars[start..pos].iter().collect();
            let tok = match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier,
            };
            out.push((tok, word));
        }
    }
}

/// Longest run of special characters that still forms an operator (`!=` over `!`).
fn scan_symbol(chars: &[char], pos: &mut usize) -> (Token, String) {
    let mut buffer = String::new();
    let mut last: Option<(Token, String)> = None;
    while *pos < chars.len() && is_special(chars[*pos]) {
        buffer.push(chars[*pos]);
        if let Some(tok) = symbol_token(&buffer) {
            last = Some((tok, buffer.clone()));
            *pos += 1;
        } else if last.is_some() {
            break;
        } else {
            *pos += 1;
        }
    }
    last.unwrap_or_else(|| {
        (
            Token::Error,
            format!("error expected: keyword found '{buffer}'"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let cases: &[(&str, &[Token])] = &[
            ("", &[Token::EndOfString]),
            ("a", &[Token::Identifier, Token::EndOfString]),
            (
                "a!=b",
                &[
                    Token::Identifier,
                    Token::NotEquals,
                    Token::Identifier,
                    Token::EndOfString,
                ],
            ),
            (
                "!a",
                &[Token::DoesNotExist, Token::Identifier, Token::EndOfString],
            ),
            (
                " a in (x, y) ",
                &[
                    Token::Identifier,
                    Token::In,
                    Token::OpenPar,
                    Token::Identifier,
                    Token::Comma,
                    Token::Identifier,
                    Token::ClosedPar,
                    Token::EndOfString,
                ],
            ),
            (
                "a==b",
                &[
                    Token::Identifier,
                    Token::DoubleEquals,
                    Token::Identifier,
                    Token::EndOfString,
                ],
            ),
            (
                "a=(",
                &[
                    Token::Identifier,
                    Token::Equals,
                    Token::OpenPar,
                    Token::EndOfString,
                ],
            ),
            (
                "x>1",
                &[
                    Token::Identifier,
                    Token::GreaterThan,
                    Token::Identifier,
                    Token::EndOfString,
                ],
            ),
        ];
        for (input, want) in cases {
            let got: Vec<Token> = tokenize(input).into_iter().map(|(t, _)| t).collect();
            assert_eq!(&got, want, "input {input:?}");
        }
    }
}

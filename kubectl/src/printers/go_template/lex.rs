//! The tokens of Go's text/template (`{{`/`}}` with `-` trim markers, comments, fields,
//! variables, literals), lexed up front; a lexing error becomes an `Error` token where it
//! happened, so the parser reports it only if it gets that far, as Go's lazy lexer does.

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Text(String),
    Left,
    Right,
    Space,
    /// An identifier, keyword, `true`/`false` or `nil`.
    Ident(String),
    /// `.name` (one link of a field chain).
    Field(String),
    /// `$` or `$name`.
    Var(String),
    Dot,
    /// The literal as written and its value.
    Str(String, String),
    Num(String),
    Char(String, char),
    Pipe,
    LParen,
    RParen,
    Declare,
    Assign,
    Comma,
    Error(String),
    Eof,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub pos: usize,
    pub line: usize,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    tokens: Vec<Token>,
}

pub fn lex(src: &str) -> Vec<Token> {
    let mut l = Lexer {
        src,
        pos: 0,
        tokens: Vec::new(),
    };
    if let Err(msg) = l.run() {
        let pos = l.pos;
        l.push(Tok::Error(msg), pos);
    } else {
        l.push(Tok::Eof, src.len());
    }
    l.tokens
}

impl Lexer<'_> {
    fn line_at(&self, pos: usize) -> usize {
        1 + self.src[..pos].matches('\n').count()
    }

    fn push(&mut self, tok: Tok, pos: usize) {
        let line = self.line_at(pos);
        self.tokens.push(Token { tok, pos, line });
    }

    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn run(&mut self) -> Result<(), String> {
        let mut trim_next = false;
        while self.pos < self.src.len() {
            let start = self.pos;
            let end = self.rest().find("{{").map_or(self.src.len(), |i| start + i);
            let mut text = &self.src[start..end];
            if trim_next {
                text = text.trim_start_matches(is_space);
            }
            let left_trim = self.src[end..].starts_with("{{- ");
            if left_trim {
                text = text.trim_end_matches(is_space);
            }
            if !text.is_empty() {
                self.push(Tok::Text(text.to_owned()), start);
            }
            if end == self.src.len() {
                return Ok(());
            }
            self.pos = end + if left_trim { 3 } else { 2 };
            trim_next = self.action(end)?;
        }
        Ok(())
    }

    /// Lexes one action after its `{{`; true when it ended with a right trim marker.
    fn action(&mut self, left: usize) -> Result<bool, String> {
        let after = self.rest().trim_start_matches(is_space);
        if after.starts_with("/*") {
            self.pos = self.src.len() - after.len();
            let Some(close) = self.rest().find("*/") else {
                return Err("unclosed comment".into());
            };
            self.pos += close + 2;
            if let Some(r) = self.rest().strip_prefix(" -}}") {
                self.pos = self.src.len() - r.len();
                return Ok(true);
            }
            if self.rest().starts_with("}}") {
                self.pos += 2;
                return Ok(false);
            }
            return Err("comment ends before closing delimiter".into());
        }
        self.push(Tok::Left, left);
        let mut parens = 0i32;
        loop {
            let start = self.pos;
            let src = self.src;
            let rest = &src[start..];
            if rest.starts_with("}}") {
                if parens > 0 {
                    return Err("unclosed left paren".into());
                }
                self.push(Tok::Right, start);
                self.pos += 2;
                return Ok(false);
            }
            let Some(c) = rest.chars().next() else {
                return Err("unclosed action".into());
            };
            if is_space(c) {
                let run = rest.len() - rest.trim_start_matches(is_space).len();
                if rest[run..].starts_with("-}}") {
                    self.push(Tok::Right, start + run);
                    self.pos = start + run + 3;
                    return Ok(true);
                }
                self.push(Tok::Space, start);
                self.pos += run;
                continue;
            }
            match c {
                '|' => self.single(Tok::Pipe),
                ',' => self.single(Tok::Comma),
                '=' => self.single(Tok::Assign),
                ':' if rest.starts_with(":=") => {
                    self.push(Tok::Declare, start);
                    self.pos += 2;
                }
                ':' => return Err("expected :=".into()),
                '(' => {
                    parens += 1;
                    self.single(Tok::LParen);
                }
                ')' => {
                    parens -= 1;
                    if parens < 0 {
                        return Err("unexpected right paren".into());
                    }
                    self.single(Tok::RParen);
                }
                '"' => self.quoted()?,
                '`' => {
                    let Some(end) = rest[1..].find('`') else {
                        return Err("unterminated raw quoted string".into());
                    };
                    let raw = &rest[..end + 2];
                    self.push(
                        Tok::Str(raw.to_owned(), raw[1..raw.len() - 1].into()),
                        start,
                    );
                    self.pos += raw.len();
                }
                '\'' => self.char_constant()?,
                '$' => {
                    let n = 1 + word_len(&rest[1..]);
                    self.push(Tok::Var(rest[..n].to_owned()), start);
                    self.pos += n;
                }
                '.' if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => self.number()?,
                '.' => {
                    let n = word_len(&rest[1..]);
                    if n == 0 {
                        self.single(Tok::Dot);
                    } else {
                        self.push(Tok::Field(rest[..n + 1].to_owned()), start);
                        self.pos += n + 1;
                    }
                }
                '+' | '-' | '0'..='9' => self.number()?,
                c if c == '_' || c.is_alphanumeric() => {
                    let n = word_len(rest);
                    self.push(Tok::Ident(rest[..n].to_owned()), start);
                    self.pos += n;
                }
                c => return Err(format!("bad character U+{:04X} '{c}'", c as u32)),
            }
        }
    }

    fn single(&mut self, tok: Tok) {
        let start = self.pos;
        self.push(tok, start);
        self.pos += 1;
    }

    fn quoted(&mut self) -> Result<(), String> {
        let src = self.src;
        let rest = &src[self.pos..];
        let bytes = rest.as_bytes();
        let mut i = 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => break,
                b'\n' => return Err("unterminated quoted string".into()),
                _ => i += 1,
            }
        }
        if i >= bytes.len() {
            return Err("unterminated quoted string".into());
        }
        let raw = rest[..=i].to_owned();
        let value = unquote(&raw[1..raw.len() - 1]).ok_or_else(|| "invalid syntax".to_string())?;
        let start = self.pos;
        self.pos += raw.len();
        self.push(Tok::Str(raw, value), start);
        Ok(())
    }

    fn char_constant(&mut self) -> Result<(), String> {
        let src = self.src;
        let rest = &src[self.pos..];
        let Some(end) = rest[1..].find('\'') else {
            return Err("unterminated character constant".into());
        };
        let raw = rest[..end + 2].to_owned();
        let value = unquote(&raw[1..raw.len() - 1]).unwrap_or_default();
        let mut chars = value.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return Err(format!("malformed character constant: {raw}"));
        };
        let start = self.pos;
        self.pos += raw.len();
        self.push(Tok::Char(raw, c), start);
        Ok(())
    }

    /// Go's `scanNumber`: what it takes is the literal, and a letter right after is an error.
    fn number(&mut self) -> Result<(), String> {
        let src = self.src;
        let b = &src.as_bytes()[self.pos..];
        let mut n = 0;
        let accept = |n: &mut usize, set: &[u8]| {
            let ok = b.get(*n).is_some_and(|c| set.contains(c));
            *n += usize::from(ok);
            ok
        };
        let run = |n: &mut usize, set: &[u8]| while accept(n, set) {};
        accept(&mut n, b"+-");
        let mut digits: &[u8] = b"0123456789_";
        if accept(&mut n, b"0") {
            if accept(&mut n, b"xX") {
                digits = b"0123456789abcdefABCDEF_";
            } else if accept(&mut n, b"oO") {
                digits = b"01234567_";
            } else if accept(&mut n, b"bB") {
                digits = b"01_";
            }
        }
        run(&mut n, digits);
        if accept(&mut n, b".") {
            run(&mut n, digits);
        }
        if digits.len() == 11 && accept(&mut n, b"eE") {
            accept(&mut n, b"+-");
            run(&mut n, b"0123456789_");
        }
        if let Some(&c) = b.get(n)
            && (c.is_ascii_alphanumeric() || c == b'_')
        {
            let bad = &src[self.pos..self.pos + n + 1];
            return Err(format!("bad number syntax: {bad:?}"));
        }
        let text = src[self.pos..self.pos + n].to_owned();
        let start = self.pos;
        self.pos += n;
        self.push(Tok::Num(text), start);
        Ok(())
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn word_len(s: &str) -> usize {
    s.char_indices()
        .find(|(_, c)| !(*c == '_' || c.is_alphanumeric()))
        .map_or(s.len(), |(i, _)| i)
}

/// Go's `strconv.Unquote` body for double-quoted and character literals.
pub fn unquote(body: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let hex = |chars: &mut std::str::Chars, n: usize| {
            let digits: String = chars.by_ref().take(n).collect();
            (digits.len() == n)
                .then(|| u32::from_str_radix(&digits, 16).ok())
                .flatten()
        };
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' => out.push('\\'),
            '"' => out.push('"'),
            '\'' => out.push('\''),
            'x' => out.push(char::from_u32(hex(&mut chars, 2)?)?),
            'u' => out.push(char::from_u32(hex(&mut chars, 4)?)?),
            'U' => out.push(char::from_u32(hex(&mut chars, 8)?)?),
            d @ '0'..='7' => {
                let rest: String = chars.by_ref().take(2).collect();
                out.push(char::from_u32(
                    u32::from_str_radix(&format!("{d}{rest}"), 8).ok()?,
                )?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// How Go's parser names a token in `unexpected ...`.
pub fn describe(tok: &Tok) -> String {
    let quote = |s: &str| {
        if s.chars().count() > 10 {
            format!("{:?}...", s.chars().take(10).collect::<String>())
        } else {
            format!("{s:?}")
        }
    };
    match tok {
        Tok::Eof => "EOF".into(),
        Tok::Error(m) => m.clone(),
        Tok::Left => quote("{{"),
        Tok::Right => quote("}}"),
        Tok::Space => quote(" "),
        Tok::Ident(s) if is_keyword(s) => format!("<{s}>"),
        Tok::Ident(s) | Tok::Field(s) | Tok::Var(s) | Tok::Num(s) | Tok::Text(s) => quote(s),
        Tok::Str(raw, _) | Tok::Char(raw, _) => quote(raw),
        Tok::Dot => quote("."),
        Tok::Pipe => quote("|"),
        Tok::LParen => quote("("),
        Tok::RParen => quote(")"),
        Tok::Declare => quote(":="),
        Tok::Assign => quote("="),
        Tok::Comma => quote(","),
    }
}

pub fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "if" | "else"
            | "end"
            | "range"
            | "with"
            | "template"
            | "define"
            | "block"
            | "break"
            | "continue"
            | "nil"
    )
}

//! Parser for the label selector string syntax (`a=b,c in (x,y),!d`).

use std::collections::BTreeSet;

use super::error::SelectorError;
use super::lexer::{Token, tokenize};
use super::requirement::{Operator, Requirement, validate_label_key};
use crate::validation::FieldPath;

/// Binary operators listed in "expected" messages, in upstream's order.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

struct Parser {
    items: Vec<(Token, String)>,
    pos: usize,
}

/// Whether `in`/`notin` are read as keywords (after a key) or as plain words (as values).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

type ReqResult<T> = Result<T, String>;

impl Parser {
    fn lookahead(&self, ctx: Context) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(self.pos)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        (Self::in_context(tok, ctx), lit)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let item = self.lookahead(ctx);
        if self.pos < self.items.len() {
            self.pos += 1;
        }
        item
    }

    fn in_context(tok: Token, ctx: Context) -> Token {
        match (ctx, tok) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => tok,
        }
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(SelectorError::Requirement)?;
                    reqs.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(SelectorError::Syntax(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::Syntax(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Token::EndOfString => return Ok(reqs),
                _ => {
                    return Err(SelectorError::Syntax(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> ReqResult<Requirement> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        let (op, values) = match inferred {
            Some(op) => (op, BTreeSet::new()),
            None => {
                let op = self.parse_operator()?;
                let values = match op {
                    Operator::In | Operator::NotIn => self.parse_values()?,
                    _ => self.parse_exact_value()?,
                };
                (op, values)
            }
        };
        Requirement::new_at(key, op, values.into_iter().collect(), &FieldPath::root())
            .map_err(|e| e.to_string())
    }

    /// Reads `!key` or `key`; a key followed by `,` or the end is an existence test.
    fn parse_key_and_infer_operator(&mut self) -> ReqResult<(String, Option<Operator>)> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        if let Some(e) = validate_label_key(&lit, &FieldPath::root()) {
            return Err(e.to_string());
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::EndOfString || next == Token::Comma) && op.is_none() {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> ReqResult<Operator> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> ReqResult<BTreeSet<String>> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// Values inside parentheses; empty slots (`(,a)`, `(a,)`, `(a,,b)`) count as `""`.
    fn parse_identifiers_list(&mut self) -> ReqResult<BTreeSet<String>> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        self.consume(Context::Values);
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// The single value after `=`, `==`, `!=`, `>` or `<`; nothing before `,`/end means `""`.
    fn parse_exact_value(&mut self) -> ReqResult<BTreeSet<String>> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

/// Parses a selector string into its requirements, sorted by key.
pub(crate) fn parse_requirements(input: &str) -> Result<Vec<Requirement>, SelectorError> {
    let mut p = Parser {
        items: tokenize(input),
        pos: 0,
    };
    let mut reqs = p.parse()?;
    reqs.sort_by(|a, b| a.key().cmp(b.key()));
    Ok(reqs)
}

//! How deep a statement may nest before it is planned ([`check`]).
//!
//! Planning, optimizing, printing and dropping a statement recurse once per
//! level of its expressions, so a long chain of operators (`1+1+...+1`,
//! `a = 1 OR a = 2 OR ...`, `SELECT 1 UNION SELECT 1 UNION ...`), which the
//! parser builds without recursing, can overflow a thread's stack and abort
//! the process. SQLite caps expression depth at 1,000
//! (`SQLITE_MAX_EXPR_DEPTH`); logsql does the same: a statement nesting
//! deeper is refused with [`TooComplex`] before anything plans it. A first
//! pass over the tokens bounds the statement's size, so the parse that
//! measures depth cannot build a tree too deep to drop.

use std::ops::ControlFlow;

use datafusion::sql::parser::{CopyToSource, DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{Expr, Query, SetExpr, Statement, Visit, Visitor};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// The deepest an expression may nest, and the longest a chain of set
/// operations may be (SQLite's `SQLITE_MAX_EXPR_DEPTH`).
pub const MAX_DEPTH: usize = 1000;

/// The most operators (`+`, `AND`, `UNION`, `::`, ...) a text of statements
/// may hold: a chain of as many still parses and drops within a thread's
/// stack, and no statement a person or a dashboard writes comes near it.
pub const MAX_OPERATORS: usize = 100_000;

/// The stack a thread that plans statements needs: planning recurses about
/// 10 KiB per level of nesting in an unoptimized build (under 1 KiB
/// optimized), so [`MAX_DEPTH`] levels fit with room for the optimizer's own
/// recursion. Reserved, not committed: pages are touched only as deep as a
/// statement goes. Tokio's workers get 2 MiB by default, too little.
pub const PLANNING_STACK: usize = 64 << 20;

/// A statement refused for nesting deeper than logsql plans.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("statement too complex: {what} (write long lists as IN (...), or split the statement)")]
pub struct TooComplex {
    /// What is too deep or too long.
    pub what: String,
    /// The limit it passed.
    pub limit: usize,
}

/// Whether `sql` (one or more statements) nests within [`MAX_DEPTH`] and
/// holds at most [`MAX_OPERATORS`] operators. Text that does not tokenize
/// or parse passes: the planner reports its error.
pub fn check(sql: &str) -> Result<(), TooComplex> {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else {
        return Ok(());
    };
    let operators = tokens.iter().filter(|t| is_operator(t)).count();
    if operators > MAX_OPERATORS {
        return Err(TooComplex {
            what: format!(
                "the text holds {operators} operators, more than the {MAX_OPERATORS} allowed"
            ),
            limit: MAX_OPERATORS,
        });
    }
    let Ok(statements) = DFParser::parse_sql(sql) else {
        return Ok(());
    };
    statements.iter().try_for_each(check_statement)
}

/// Whether one parsed statement nests within [`MAX_DEPTH`].
fn check_statement(statement: &DFStatement) -> Result<(), TooComplex> {
    let mut depth = Depth::default();
    let flow = match statement {
        DFStatement::Statement(statement) => Statement::visit(statement, &mut depth),
        DFStatement::Explain(explain) => return check_statement(&explain.statement),
        DFStatement::CopyTo(copy) => match &copy.source {
            CopyToSource::Query(query) => Query::visit(query, &mut depth),
            CopyToSource::Relation(_) => ControlFlow::Continue(()),
        },
        DFStatement::CreateExternalTable(_) | DFStatement::Reset(_) => ControlFlow::Continue(()),
    };
    match flow {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(what) => Err(TooComplex {
            what,
            limit: MAX_DEPTH,
        }),
    }
}

/// Whether a token joins two operands (or prefixes one): what a chain the
/// parser builds without recursing is made of.
fn is_operator(token: &Token) -> bool {
    match token {
        Token::Word(word) => matches!(
            word.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::XOR
                | Keyword::NOT
                | Keyword::IS
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::BETWEEN
                | Keyword::UNION
                | Keyword::INTERSECT
                | Keyword::EXCEPT
                | Keyword::COLLATE
                | Keyword::AT
        ),
        Token::Whitespace(_)
        | Token::Number(..)
        | Token::Char(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::Comma
        | Token::LParen
        | Token::RParen
        | Token::SemiColon
        | Token::Period
        | Token::EOF => false,
        _ => true,
    }
}

/// The visitor measuring how deep expressions nest; it stops (with what it
/// found) at the first place deeper than [`MAX_DEPTH`].
#[derive(Default)]
struct Depth {
    /// Expressions open around the one being visited.
    open: usize,
}

impl Visitor for Depth {
    type Break = String;

    fn pre_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<String> {
        self.open += 1;
        match self.open > MAX_DEPTH {
            true => ControlFlow::Break(format!(
                "an expression nests more than {MAX_DEPTH} levels deep"
            )),
            false => ControlFlow::Continue(()),
        }
    }

    fn post_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<String> {
        self.open -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<String> {
        // A chain of set operations nests on its left; walked here without
        // recursing, before the visitor recurses into it.
        let mut chain = 0usize;
        let mut body = query.body.as_ref();
        while let SetExpr::SetOperation { left, .. } = body {
            chain += 1;
            if chain > MAX_DEPTH {
                return ControlFlow::Break(format!(
                    "a chain of set operations (UNION, INTERSECT, EXCEPT) is longer than \
                     {MAX_DEPTH}"
                ));
            }
            body = left.as_ref();
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(terms: usize, op: &str) -> String {
        vec!["1"; terms].join(op)
    }

    #[test]
    fn statements_within_the_limits_pass() {
        assert_eq!(
            check(&format!("SELECT {}", chain(MAX_DEPTH - 1, "+"))),
            Ok(())
        );
        let list = vec!["1"; 50_000].join(", ");
        assert_eq!(check(&format!("SELECT 1 WHERE 1 IN ({list})")), Ok(()));
        assert_eq!(check("SELECT * FROM 'x.mcap' WHERE topic = '/a'"), Ok(()));
        // Text that does not parse is the planner's to report.
        assert_eq!(check("SELEC 1"), Ok(()));
    }

    #[test]
    fn a_deep_chain_is_refused_before_planning() {
        let err = check(&format!("SELECT {}", chain(5000, "+"))).expect_err("too deep");
        assert_eq!(err.limit, MAX_DEPTH);
        assert!(
            err.to_string()
                .starts_with("statement too complex: an expression nests")
        );
        let ors = (0..2000)
            .map(|i| format!("a = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        assert!(check(&format!("SELECT 1 FROM t WHERE {ors}")).is_err());
        let unions = vec!["SELECT 1"; 1500].join(" UNION ALL ");
        let err = check(&unions).expect_err("too long a chain");
        assert!(err.what.contains("set operations"), "{err}");
        let explained = format!("EXPLAIN SELECT {}", chain(5000, "*"));
        assert!(check(&explained).is_err());
    }

    #[test]
    fn a_text_of_too_many_operators_is_refused_before_parsing() {
        let err = check(&format!("SELECT {}", chain(MAX_OPERATORS + 10, "+")))
            .expect_err("too many operators");
        assert_eq!(err.limit, MAX_OPERATORS);
    }
}

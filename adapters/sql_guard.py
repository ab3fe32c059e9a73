"""Structural checks that let a user's SQL read the audit view and nothing else.

The check works on DuckDB's own parse tree (`extract_statements` for the statement type,
`json_serialize_sql` for the tree), not on regexes: a statement must be one SELECT (or WITH ... SELECT)
whose table references are the scoped `audit` view or the query's own CTEs; table functions
(`read_*`, `*_scan`, `query`, ...), qualified names, DESCRIBE/SUMMARIZE and file paths are refused.
It fails closed: every node of the tree must be of a kind it knows (`EXPRESSION_CLASSES`, `NODE_TYPES`), so a
construct a newer DuckDB adds, or a shape it renames, is refused by name until someone reads it here.
The query then runs in a sandbox (adapters.audit_sandbox) holding only the reader's rows, with external
access disabled, as a second line of defence.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb

VIEW = "audit"
ALLOWED_REFS = frozenset({"BASE_TABLE", "SUBQUERY", "JOIN", "EMPTY", "EXPRESSION_LIST", "PIVOT"})
# Parsed expressions (nodes with a `class`), as DuckDB 2.0's json_serialize_sql writes them.
EXPRESSION_CLASSES = frozenset({
    "BETWEEN", "CASE", "CAST", "COLLATE", "COLUMN_REF", "COMPARISON", "CONJUNCTION", "CONSTANT", "FUNCTION",
    "LAMBDA", "LAMBDA_REF", "OPERATOR", "PARAMETER", "POSITIONAL_REFERENCE", "STAR", "SUBQUERY", "TYPE", "WINDOW",
})
# Everything else with a `type`: query nodes, result modifiers, order directions and table references.
NODE_TYPES = frozenset({
    "SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE",
    "ORDER_MODIFIER", "LIMIT_MODIFIER", "LIMIT_PERCENT_MODIFIER", "DISTINCT_MODIFIER",
    "ORDER_DEFAULT", "ASCENDING", "DESCENDING",
}) | ALLOWED_REFS | {"TABLE_FUNCTION", "SHOW_REF"}  # the last two are known only to be refused with a reason
REFUSED_FUNCTION_PREFIXES = ("read_", "duckdb_", "pragma_", "parquet_", "iceberg_", "delta_", "sniff_", "glob")
REFUSED_FUNCTIONS = frozenset({"query", "query_table", "getenv", "current_setting", "which_secret", "load_aws_credentials"})


class RefusedQuery(ValueError):
    """A statement the audit query endpoint will not run; the message says why and what is allowed."""


def check_select(sql: str, connection: duckdb.DuckDBPyConnection, reserved: frozenset[str]) -> None:
    """Raise RefusedQuery unless `sql` is a single SELECT that reads only `audit` and its own CTEs.

    `reserved` holds every table and view name in the database: a CTE may not borrow one, because a
    CTE referenced before its definition would silently fall through to the real table.
    """
    _check_statement_type(sql)
    tree = _parse_tree(sql, connection)
    ctes = {name.lower() for name in _cte_names(tree)}
    borrowed = sorted(ctes & reserved - {VIEW})
    if borrowed:
        raise RefusedQuery(f"a CTE may not be named like a database table: {', '.join(borrowed)}")
    check_tree(tree, ctes)


def _check_statement_type(sql: str) -> None:
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise RefusedQuery(f"the query does not parse: {error}") from error
    if not statements:
        raise RefusedQuery("the query is empty: write one SELECT over the audit view")
    if len(statements) > 1:
        raise RefusedQuery(f"one statement at a time: found {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise RefusedQuery(f"{kind.name} statements are refused: only SELECT (or WITH ... SELECT) over the audit view")


def _parse_tree(sql: str, connection: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    row = connection.execute("SELECT json_serialize_sql($1)", [sql]).fetchone()
    assert row is not None, "a SELECT of one value answers one row"
    (serialized,) = row
    tree = json.loads(serialized)
    if tree.get("error"):
        raise RefusedQuery(f"the query cannot be checked: {tree.get('error_message', 'unknown parser error')}")
    return tree


def _cte_names(tree: Any) -> Iterator[str]:
    for node in _dicts(tree):
        for entry in (node.get("cte_map") or {}).get("map", []):
            yield entry["key"]


def _dicts(tree: Any) -> Iterator[dict[str, Any]]:
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def check_tree(tree: dict[str, Any], ctes: set[str]) -> None:
    """Every node of a parse tree, checked; `check_select` parses and calls this."""
    for node in _dicts(tree):
        _check_node(node, ctes)


def _check_node(node: dict[str, Any], ctes: set[str]) -> None:
    _check_known(node)
    if _is_table_ref(node):
        _check_table_ref(node, ctes)
    elif node.get("class") == "FUNCTION":
        _check_function(node.get("function_name", ""), node.get("schema", ""), node.get("catalog", ""))


def _check_known(node: dict[str, Any]) -> None:
    """Fail closed: a node of a kind this guard has not been taught is refused, by name."""
    if "class" in node:
        if node["class"] not in EXPRESSION_CLASSES:
            raise RefusedQuery(f"the construct {node['class']} ({node.get('type')}) is not allowed in audit queries")
        return
    kind = node.get("type")
    if isinstance(kind, str) and kind not in NODE_TYPES and not kind.endswith("_TYPE_INFO"):  # type info: data only
        raise RefusedQuery(f"the construct {kind} is not allowed in audit queries")


def _is_table_ref(node: dict[str, Any]) -> bool:
    return "class" not in node and node.get("type") in ALLOWED_REFS | {"TABLE_FUNCTION", "SHOW_REF"}


def _check_table_ref(node: dict[str, Any], ctes: set[str]) -> None:
    kind = node["type"]
    if kind == "TABLE_FUNCTION":
        name = (node.get("function") or {}).get("function_name", "a table function")
        raise RefusedQuery(f"table functions such as {name}() are refused: read from the audit view")
    if kind == "SHOW_REF":
        raise RefusedQuery("DESCRIBE, SHOW and SUMMARIZE are refused: select from the audit view")
    if kind not in ALLOWED_REFS:
        raise RefusedQuery(f"{kind} references are refused: read from the audit view")
    if kind == "BASE_TABLE":
        _check_table_name(node)
        if node["table_name"].lower() not in ctes | {VIEW}:
            raise RefusedQuery(f"only the audit view can be read, not {node['table_name']!r}")


def _check_table_name(node: dict[str, Any]) -> None:
    if node.get("catalog_name") or node.get("schema_name"):
        path = ".".join(p for p in (node.get("catalog_name"), node.get("schema_name"), node["table_name"]) if p)
        raise RefusedQuery(f"qualified names such as {path!r} are refused: read from the audit view")


def _check_function(name: str, schema: str, catalog: str) -> None:
    lowered = name.lower()
    if schema or catalog:
        raise RefusedQuery(f"qualified function names such as {schema}.{name} are refused")
    if lowered in REFUSED_FUNCTIONS or lowered.startswith(REFUSED_FUNCTION_PREFIXES) or lowered.endswith("_scan"):
        raise RefusedQuery(f"the function {name}() is refused in audit queries")

"""SQL over a store's table with DuckDB: ``swaplab results query "SELECT ..."``.

The table is visible as the view ``results`` (read straight from ``results.parquet``, so
DuckDB scans only the columns a query names; rebuilt first when a record is newer). DuckDB is imported here only: the rest of the
store needs pyarrow and pandas alone.
"""

from __future__ import annotations

from .points import Store, StoreError
from .table import is_stale, write


def query(store: Store, sql: str):
    """The query's result as a pandas DataFrame. Raises StoreError for a bad query."""
    import duckdb

    if is_stale(store):
        write(store)
    con = duckdb.connect(":memory:")
    try:
        path = str(store.table_path).replace("'", "''")
        con.execute(f"CREATE VIEW results AS SELECT * FROM read_parquet('{path}')")
        try:
            return con.execute(sql).df()
        except duckdb.Error as e:
            raise StoreError(f"query: {' '.join(str(e).split())}") from None
    finally:
        con.close()

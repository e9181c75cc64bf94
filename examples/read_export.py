"""Load a `glk export` directory the way a notebook would.

    glk export testdata/fixtures/real/dlm2-6.1 -o /tmp/glk-export
    python3 examples/read_export.py /tmp/glk-export

The export is Hive-partitioned (kind=KIND/node=NODE/part-0.parquet), so pyarrow, pandas,
polars and DuckDB read one node or the whole cluster as one dataset, with `node` (and
`kind`) coming back as columns from the paths.
"""

import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds


def main(root: str) -> None:
    # pyarrow: one dataset per frame kind, the node partition as a column.
    events = ds.dataset(f"{root}/kind=events", format="parquet", partitioning="hive")
    table = events.to_table()
    print(f"pyarrow: events {table.num_rows} rows, columns {len(table.schema.names)}")
    # pyarrow compute works on every column: strings are plain (large) strings, not
    # string_view, on which pyarrow's kernels fail.
    views = [f.name for f in table.schema if str(f.type) == "string_view"]
    large = [f.name for f in table.schema if pa.types.is_large_string(f.type)]
    print(f"pyarrow: {len(large)} large_string columns, string_view columns {views}")
    demotes = table.filter(pc.equal(table["event"], "demote_rq"))
    first = demotes.sort_by([("glock", "ascending"), ("ts_ns", "ascending")]).take([0])
    print(f"pyarrow compute: demote_rq events {demotes.num_rows}, first glock {first['glock'][0]}")
    df = table.to_pandas()
    per_node = df.groupby("node").size().to_dict()
    print(f"pandas: events per node {per_node}")

    # polars: a lazy scan over every node's files.
    glocks = pl.scan_parquet(f"{root}/kind=glocks/**/*.parquet", hive_partitioning=True)
    waiting = (
        glocks.filter(pl.col("waiters") > 0)
        .group_by("node")
        .agg(pl.col("glock").n_unique().alias("glocks_with_waiters"))
        .sort("node")
        .collect()
    )
    for node, n in waiting.iter_rows():
        print(f"polars: node={node} glocks_with_waiters={n}")

    # DuckDB: the whole export in SQL, kind and node from the paths.
    con = duckdb.connect()
    rows = con.execute(
        f"""
        SELECT glock, count(*) AS remote_demotes, count(DISTINCT node) AS nodes
        FROM read_parquet('{root}/kind=events/*/*.parquet', hive_partitioning = true)
        WHERE event = 'demote_rq' AND remote
        GROUP BY glock ORDER BY remote_demotes DESC, glock LIMIT 3
        """
    ).fetchall()
    for glock, n, nodes in rows:
        print(f"duckdb: {glock} remote_demotes={n} nodes={nodes}")
    kinds = con.execute(
        f"""
        SELECT kind, node, count(*) FROM read_parquet('{root}/*/*/*.parquet',
            hive_partitioning = true, union_by_name = true)
        GROUP BY kind, node ORDER BY kind, node
        """
    ).fetchall()
    for kind, node, n in kinds:
        print(f"duckdb: kind={kind} node={node} rows={n}")


if __name__ == "__main__":
    main(sys.argv[1])

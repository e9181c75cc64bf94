"""Read a glk fleet dataset (`glk export --dataset DIR --cluster NAME`) three ways and
print what each sees, as one JSON document:

    glk export CAPTURE --dataset /srv/glk --cluster prod-a
    python3 examples/read_dataset.py /srv/glk

DIR/table=KIND/cluster=CLUSTER/node=NODE/capture-ID.parquet: each table is one Hive-
partitioned dataset over every cluster, node and capture; `cluster` and `node` come back as
columns from the paths, `capture`, `fs` (the filesystem's lock table) and `time` (a UTC
timestamp in microseconds) are in the files.
"""

import json
import sys

import duckdb
import polars as pl
import pyarrow.dataset as ds


def main(root: str) -> None:
    out = {}
    # DuckDB: rows per cluster and node, captures, and the most contended glocks over
    # every capture (glocks with waiters, by how many snapshots of how many captures; a
    # glock is known by its cluster, filesystem and number).
    con = duckdb.connect()
    glocks = f"read_parquet('{root}/table=glocks/*/*/*.parquet', hive_partitioning = true)"
    out["duckdb_rows"] = {
        f"{c}/{n}": r
        for c, n, r in con.execute(
            f"SELECT cluster, node, count(*) FROM {glocks} GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    }
    out["duckdb_captures"] = con.execute(
        f"SELECT count(DISTINCT capture) FROM {glocks}"
    ).fetchone()[0]
    out["duckdb_time_type"] = con.execute(
        f"SELECT typeof(time) FROM {glocks} LIMIT 1"
    ).fetchone()[0]
    out["duckdb_first_time"] = str(
        con.execute(f"SELECT min(time) FROM {glocks}").fetchone()[0]
    )
    out["duckdb_most_contended"] = [
        list(r)
        for r in con.execute(
            f"""
            SELECT cluster, fs, glock, count(DISTINCT capture) AS captures,
                   count(*) AS snapshots_with_waiters, max(waiters) AS most_waiters
            FROM {glocks}
            WHERE waiters > 0
            GROUP BY cluster, fs, glock
            ORDER BY captures DESC, snapshots_with_waiters DESC, cluster, fs, glock
            LIMIT 5
            """
        ).fetchall()
    ]
    # pyarrow: one dataset per table, the partitions as columns.
    table = ds.dataset(f"{root}/table=glocks", format="parquet", partitioning="hive")
    t = table.to_table()
    out["pyarrow_rows"] = t.num_rows
    out["pyarrow_time_type"] = str(t.schema.field("time").type)
    out["pyarrow_columns"] = sorted(t.schema.names)
    # polars: a lazy scan over every file.
    lf = pl.scan_parquet(f"{root}/table=glocks/**/*.parquet", hive_partitioning=True)
    per = (
        lf.group_by("cluster", "node")
        .agg(pl.len().alias("rows"), pl.col("capture").n_unique().alias("captures"))
        .sort("cluster", "node")
        .collect()
    )
    out["polars_rows"] = {f"{c}/{n}": r for c, n, r, _ in per.iter_rows()}
    out["polars_time_type"] = str(lf.collect_schema()["time"])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])

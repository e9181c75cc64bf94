"""Read a glk fleet dataset with Spark and rank the most contended glocks over every capture.

    glk export CAPTURE --dataset /srv/glk --cluster prod-a
    python3 examples/spark_dataset.py /srv/glk

Needs pyspark and a Java runtime (Debian: default-jre-headless). Spark discovers the
`cluster` and `node` partitions from the paths and reads `time` as a timestamp.
"""

import sys

from pyspark.sql import SparkSession


def main(root: str) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("glk-dataset")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    glocks = spark.read.option("basePath", f"{root}/table=glocks").parquet(
        f"{root}/table=glocks"
    )
    glocks.createOrReplaceTempView("glocks")
    print("schema:", ", ".join(f"{f.name}:{f.dataType.simpleString()}" for f in glocks.schema))
    for r in spark.sql(
        "SELECT cluster, node, count(*) AS n, count(DISTINCT capture) AS captures, min(time) AS first "
        "FROM glocks GROUP BY cluster, node ORDER BY cluster, node"
    ).collect():
        print(f"rows {r.cluster}/{r.node} {r.n} captures={r.captures} first={r.first}")
    for r in spark.sql(
        """
        SELECT cluster, fs, glock, count(DISTINCT capture) AS captures,
               count(*) AS snapshots_with_waiters, max(waiters) AS most_waiters
        FROM glocks WHERE waiters > 0
        GROUP BY cluster, fs, glock
        ORDER BY captures DESC, snapshots_with_waiters DESC, cluster, fs, glock
        LIMIT 5
        """
    ).collect():
        print(f"contended {r.cluster} {r.fs} {r.glock} captures={r.captures} "
              f"snapshots={r.snapshots_with_waiters} most_waiters={r.most_waiters}")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])

//! A Parquet writer whose files every reader can compute on.
//!
//! polars 0.55's own `ParquetWriter` always writes its newest Arrow types, so string
//! columns come out as Arrow `string_view`, on which pyarrow's compute functions fail
//! ("no kernel matching input types (string_view, string)" from `equal`, `sort_by`,
//! `take`). This writer encodes the frames at polars' oldest compatibility level instead:
//! strings are written as plain `large_string`, which pyarrow, pandas, polars and DuckDB
//! all compute on. Each call to [`Writer::write`] adds row groups; memory holds one batch.

use std::io::Write;

use polars::prelude::*;
use polars_arrow::array::PrimitiveArray;
use polars_io::parquet::write::get_encodings;
use polars_parquet::read::ParquetError;
use polars_parquet::write::{
    array_to_columns, to_parquet_schema, CompressionOptions, Compressor, DynIter,
    DynStreamingIterator, Encoding, FallibleStreamingIterator, FileWriter, SchemaDescriptor,
    StatisticsOptions, Version, WriteOptions,
};

/// Rows per row group when one frame is written whole.
pub const ROW_GROUP: usize = 512 * 512;

/// Writes frames of one schema as zstd-compressed row groups.
pub struct Writer<W: Write> {
    inner: FileWriter<W>,
    parquet: SchemaDescriptor,
    encodings: Vec<Vec<Encoding>>,
    options: WriteOptions,
    /// The columns written as timestamps (by position).
    timestamps: Vec<bool>,
}

/// The Arrow type of a timestamp column: microseconds since the epoch, UTC (Spark 3 reads
/// no nanosecond timestamps from Parquet).
fn timestamp_type() -> ArrowDataType {
    ArrowDataType::Timestamp(ArrowTimeUnit::Microsecond, Some("UTC".into()))
}

impl<W: Write> Writer<W> {
    /// Starts a file for frames of `schema`.
    pub fn new(out: W, schema: &Schema) -> PolarsResult<Writer<W>> {
        Writer::with_timestamps(out, schema, &[])
    }

    /// Starts a file for frames of `schema` whose `Int64` columns named in `timestamps`
    /// (microseconds since the epoch) are written as Parquet timestamps (µs, UTC).
    pub fn with_timestamps(
        out: W,
        schema: &Schema,
        timestamps: &[&str],
    ) -> PolarsResult<Writer<W>> {
        let mut arrow = schema.to_arrow(CompatLevel::oldest());
        let mut marked = Vec::with_capacity(arrow.len());
        for (name, field) in arrow.iter_mut() {
            let ts = timestamps.contains(&name.as_str()) && field.dtype == ArrowDataType::Int64;
            if ts {
                field.dtype = timestamp_type();
            }
            marked.push(ts);
        }
        let parquet = to_parquet_schema(&arrow)?;
        let encodings = get_encodings(&arrow).as_ref().to_vec();
        let options = WriteOptions {
            statistics: StatisticsOptions::default(),
            compression: CompressionOptions::Zstd(None),
            version: Version::V1,
            data_page_size: None,
        };
        let inner = FileWriter::try_new(out, arrow, options)?;
        Ok(Writer {
            inner,
            parquet,
            encodings,
            options,
            timestamps: marked,
        })
    }

    /// Appends `df` (which must have the writer's schema) as row groups of at most
    /// [`ROW_GROUP`] rows.
    pub fn write(&mut self, df: &DataFrame) -> PolarsResult<()> {
        let mut start = 0;
        while start < df.height() {
            let mut part = df.slice(start as i64, ROW_GROUP);
            start += part.height();
            part.rechunk_mut_par();
            for batch in part.iter_chunks(CompatLevel::oldest(), false) {
                let rows = batch.len();
                if rows == 0 {
                    continue;
                }
                let mut columns = Vec::new();
                for (((array, ty), enc), ts) in batch
                    .columns()
                    .iter()
                    .zip(self.parquet.fields())
                    .zip(&self.encodings)
                    .zip(&self.timestamps)
                {
                    let array = if *ts {
                        as_timestamps(array)?
                    } else {
                        array.clone()
                    };
                    for pages in array_to_columns(&array, ty.clone(), self.options, enc)? {
                        let pages = pages.map(|p| {
                            p.map_err(|e| ParquetError::FeatureNotSupported(e.to_string()))
                        });
                        let compressed =
                            Compressor::new_from_vec(pages, self.options.compression, Vec::new())
                                .map_err(PolarsError::from);
                        columns.push(Ok(DynStreamingIterator::new(compressed)));
                    }
                }
                self.inner
                    .write(rows as u64, DynIter::new(columns.into_iter()))?;
            }
        }
        Ok(())
    }

    /// Writes the footer; returns the file's size.
    pub fn finish(mut self) -> PolarsResult<u64> {
        self.inner.end(None)
    }
}

/// An `Int64` array as timestamps ([`timestamp_type`]): the same values, another logical type.
fn as_timestamps(array: &ArrayRef) -> PolarsResult<ArrayRef> {
    let ints = array
        .as_any()
        .downcast_ref::<PrimitiveArray<i64>>()
        .ok_or_else(|| polars_err!(ComputeError: "a timestamp column is not Int64"))?;
    Ok(Box::new(ints.clone().to(timestamp_type())))
}

//! The OTLP messages slotest sends, declared with `prost` from the OpenTelemetry protocol's
//! `.proto` files (opentelemetry-proto v1: common, resource, trace, metrics and the two
//! collector services): only the fields slotest fills, each with the protocol's tag. The tests
//! decode what is sent with the OpenTelemetry project's own generated types
//! (`opentelemetry-proto`), so a wrong tag here fails there.

#![allow(missing_docs, reason = "the fields are the protocol's, documented in its .proto files")]

/// `opentelemetry.proto.common.v1.AnyValue`: a string, bool, int or double.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    #[prost(oneof = "Value", tags = "1, 2, 3, 4")]
    pub value: Option<Value>,
}

/// `AnyValue.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    #[prost(string, tag = "1")]
    String(String),
    #[prost(bool, tag = "2")]
    Bool(bool),
    #[prost(int64, tag = "3")]
    Int(i64),
    #[prost(double, tag = "4")]
    Double(f64),
}

/// `opentelemetry.proto.common.v1.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `opentelemetry.proto.common.v1.InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Scope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `opentelemetry.proto.resource.v1.Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraces {
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `opentelemetry.proto.trace.v1.ResourceSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// `opentelemetry.proto.trace.v1.ScopeSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<Scope>,
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

/// `opentelemetry.proto.trace.v1.Span`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Span {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    /// `Span.SpanKind`: 1 internal, 3 client.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// `Span.SpanKind.SPAN_KIND_INTERNAL`.
pub const KIND_INTERNAL: i32 = 1;
/// `Span.SpanKind.SPAN_KIND_CLIENT`.
pub const KIND_CLIENT: i32 = 3;

/// `opentelemetry.proto.trace.v1.Span.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    #[prost(fixed64, tag = "1")]
    pub time_unix_nano: u64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
}

/// `opentelemetry.proto.trace.v1.Status`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    /// `Status.StatusCode`: 0 unset, 1 ok, 2 error.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `Status.StatusCode.STATUS_CODE_ERROR`.
pub const STATUS_ERROR: i32 = 2;

/// `opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetrics {
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `opentelemetry.proto.metrics.v1.ResourceMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// `opentelemetry.proto.metrics.v1.ScopeMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<Scope>,
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// `opentelemetry.proto.metrics.v1.Metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(string, tag = "3")]
    pub unit: String,
    #[prost(oneof = "Data", tags = "5, 9, 11")]
    pub data: Option<Data>,
}

/// `Metric.data`: the kinds slotest sends.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    #[prost(message, tag = "9")]
    Histogram(Histogram),
    #[prost(message, tag = "11")]
    Summary(Summary),
}

/// `opentelemetry.proto.metrics.v1.Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `opentelemetry.proto.metrics.v1.NumberDataPoint`, a double.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(double, tag = "4")]
    pub as_double: f64,
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
}

/// `opentelemetry.proto.metrics.v1.Histogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// `AggregationTemporality`: 1 delta (one case's window), 2 cumulative.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// `AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA`.
pub const DELTA: i32 = 1;

/// `opentelemetry.proto.metrics.v1.HistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramDataPoint {
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(double, optional, tag = "11")]
    pub min: Option<f64>,
    #[prost(double, optional, tag = "12")]
    pub max: Option<f64>,
}

/// `opentelemetry.proto.metrics.v1.Summary`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<SummaryDataPoint>,
}

/// `opentelemetry.proto.metrics.v1.SummaryDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SummaryDataPoint {
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    #[prost(double, tag = "5")]
    pub sum: f64,
    #[prost(message, repeated, tag = "6")]
    pub quantile_values: Vec<ValueAtQuantile>,
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
}

/// `SummaryDataPoint.ValueAtQuantile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueAtQuantile {
    #[prost(double, tag = "1")]
    pub quantile: f64,
    #[prost(double, tag = "2")]
    pub value: f64,
}

/// A string attribute, through the one redaction rule (a collector is an exit too).
pub fn kv(key: &str, value: impl Into<String>) -> KeyValue {
    let value = crate::redact::scrub(&value.into()).into_owned();
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(Value::String(value)) }) }
}

/// An integer attribute.
pub fn kv_int(key: &str, value: i64) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(Value::Int(value)) }) }
}

/// A double attribute.
pub fn kv_f64(key: &str, value: f64) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(Value::Double(value)) }) }
}

/// A boolean attribute.
pub fn kv_bool(key: &str, value: bool) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(Value::Bool(value)) }) }
}
